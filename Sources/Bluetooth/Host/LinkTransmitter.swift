import BluetoothHCI
import BluetoothL2CAP
import FoundationEssentials
import Glibc
import Synchronization

/// Update frames a connection's link delivered (from Number Of Completed Packets).
struct DeliveredUpdates {
    let handle: UInt16
    var count: Int
}

/// The host's ACL transmit path: the flow-control scheduler and the transport it feeds, shared by
/// the host's event loop (credits, connections) and every bearer (sends, from any thread).
///
/// Locked, not loop-bound (`LoopBound`): in the gateway every send is on the loop (the peripheral
/// through `HostPeripheralLink`, the host's components), but `ATTBearer` is public and promises
/// any thread, and the host's tests send through it from their own threads, as they drive this
/// class and `LinkDispatcher` directly.
final class LinkTransmitter: @unchecked Sendable {
    // `lock` guards everything below; transport writes happen under it so fragments keep order.
    private let lock = Mutex(())
    private var transport: (any HCITransport)?
    private var scheduler: ACLScheduler?

    /// Starts sending over a fresh controller session.
    func start(transport: any HCITransport, buffers: ACLBufferSize) {
        lock.withLock { _ in
            self.transport = transport
            scheduler = ACLScheduler(buffers: buffers)
        }
    }

    /// Drops everything queued; returns the update frames dropped. Sends do nothing until the
    /// next `start`.
    func stop() -> Int {
        lock.withLock { _ in
            let dropped = scheduler?.pendingUpdates ?? 0
            transport = nil
            scheduler = nil
            return dropped
        }
    }

    func open(_ handle: UInt16) { lock.withLock { _ in _ = scheduler?.open(handle) } }

    /// Forgets a connection; returns its update frames that will never be delivered.
    func close(_ handle: UInt16) -> Int {
        lock.withLock { _ in
            let dropped = scheduler?.close(handle) ?? 0
            flushLocked()
            return dropped
        }
    }

    /// Queues a frame; false when there is no controller or the connection is gone.
    @discardableResult
    func send(_ frame: L2CAPFrame, on handle: UInt16, isUpdate: Bool = false) -> Bool {
        lock.withLock { _ in
            guard scheduler?.enqueue(frame, on: handle, isUpdate: isUpdate) == true else { return false }
            flushLocked()
            return true
        }
    }

    /// Credits back from the controller. `delivered` is set to how many update frames are now
    /// delivered, per connection handle, in ascending handle order, leaving out handles with none;
    /// the caller keeps it between calls, so this event (one per packet sent) allocates nothing.
    func completed(_ entries: [HCIEvent.CompletedPackets], delivered: inout [DeliveredUpdates]) {
        delivered.removeAll(keepingCapacity: true)
        lock.withLock { _ in
            guard scheduler != nil else { return }
            for entry in entries {
                let count = scheduler!.completed(Int(entry.count), on: entry.handle)
                guard count > 0 else { continue }
                if let index = delivered.firstIndex(where: { $0.handle == entry.handle }) {
                    delivered[index].count += count
                } else {
                    delivered.append(DeliveredUpdates(handle: entry.handle, count: count))
                }
            }
            flushLocked()
        }
        delivered.sort { $0.handle < $1.handle }
    }

    private func flushLocked() {
        guard scheduler != nil, let transport else { return }
        // In place: a copy taken out and put back would share the queues' storage, so the
        // scheduler's first mutation would copy every queue, for every packet.
        while let packet = scheduler!.nextSendable() {
            do {
                try transport.send(.acl(packet))
            } catch {
                // The link is gone: closing it ends the event loop, which runs the recovery.
                transport.close()
                return
            }
        }
    }
}
