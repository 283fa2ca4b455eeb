import BluetoothHCI
import BluetoothL2CAP
import EventLoop

/// Update frames a connection's link delivered (from Number Of Completed Packets).
struct DeliveredUpdates {
    let handle: UInt16
    var count: Int
}

/// The host's ACL transmit path: the flow-control scheduler and the transport it feeds, shared by
/// the host's components (credits, connections, their own PDUs) and every bearer (the server's
/// PDUs).
///
/// Loop-bound (`LoopBound`), not locked: all of them run on the event loop (the host's actor, its
/// components, `ATTBearer`'s callers), and every access checks it. A call queues, then writes what
/// the controller has room for to the transport before it returns, so fragments keep their order.
final class LinkTransmitter: Sendable {
    private let session = LoopBound(Session())

    /// Starts sending over a fresh controller session.
    func start(transport: any HCITransport, buffers: ACLBufferSize) {
        session.value = Session(transport: transport, scheduler: ACLScheduler(buffers: buffers))
    }

    /// Drops everything queued; returns the update frames dropped. Sends do nothing until the
    /// next `start`.
    func stop() -> Int { session.value.stop() }

    func open(_ handle: UInt16) { _ = session.value.scheduler?.open(handle) }

    /// Forgets a connection; returns its update frames that will never be delivered.
    func close(_ handle: UInt16) -> Int { session.value.close(handle) }

    /// Queues a frame; false when there is no controller or the connection is gone.
    @discardableResult
    func send(_ frame: L2CAPFrame, on handle: UInt16, isUpdate: Bool = false) -> Bool {
        session.value.send(frame, on: handle, isUpdate: isUpdate)
    }

    /// Credits back from the controller. `delivered` is set to how many update frames are now
    /// delivered, per connection handle, in ascending handle order, leaving out handles with none;
    /// the caller keeps it between calls, so this event (one per packet sent) allocates nothing.
    func completed(_ entries: HCIEvent.CompletedPacketsList, delivered: inout [DeliveredUpdates]) {
        delivered.removeAllKeepingStorage()
        session.value.completed(entries, delivered: &delivered)
        // Sorting none or one still pays the sort's setup, for every packet.
        if delivered.count > 1 { delivered.sort { $0.handle < $1.handle } }
    }
}

/// A controller session's transmit state; changed in place in its `LoopBound`, one checked access
/// per call.
private struct Session {
    var transport: (any HCITransport)?
    var scheduler: ACLScheduler?

    mutating func stop() -> Int {
        let dropped = scheduler?.pendingUpdates ?? 0
        transport = nil
        scheduler = nil
        return dropped
    }

    mutating func close(_ handle: UInt16) -> Int {
        let dropped = scheduler?.close(handle) ?? 0
        flush()
        return dropped
    }

    mutating func send(_ frame: L2CAPFrame, on handle: UInt16, isUpdate: Bool) -> Bool {
        // A session has both or neither.
        guard scheduler != nil, let transport else { return false }
        do {
            return try scheduler!.submit(frame, on: handle, isUpdate: isUpdate) { fragment throws(HCITransportError) in
                try Self.write(fragment, to: transport)
            }
        } catch {
            // The link is gone: closing it ends the event loop, which runs the recovery.
            transport.close()
            return true
        }
    }

    mutating func completed(_ entries: HCIEvent.CompletedPacketsList, delivered: inout [DeliveredUpdates]) {
        guard scheduler != nil else { return }
        // By index: iterating the list copies it, retaining its overflow storage, per event.
        for position in entries.indices {
            let entry = entries[position]
            let count = scheduler!.completed(Int(entry.count), on: entry.handle)
            guard count > 0 else { continue }
            if let index = delivered.firstIndex(where: { $0.handle == entry.handle }) {
                delivered[index].count += count
            } else {
                delivered.append(DeliveredUpdates(handle: entry.handle, count: count))
            }
        }
        flush()
    }

    private mutating func flush() {
        // Most completed packets find nothing queued (a notification that need not wait is never
        // queued: `submit`); then the transport is not taken out, nor a closure made, to send
        // nothing.
        guard scheduler?.hasQueuedFrames == true, let transport else { return }
        // In place: a copy taken out and put back would share the queues' storage, so the
        // scheduler's first mutation would copy every queue, for every packet.
        do {
            try scheduler!.sendFragments { fragment throws(HCITransportError) in try Self.write(fragment, to: transport) }
        } catch {
            // The link is gone: closing it ends the event loop, which runs the recovery.
            transport.close()
        }
    }

    private static func write(_ fragment: ACLFragment, to transport: any HCITransport) throws(HCITransportError) {
        try transport.sendACL(
            handle: fragment.handle, boundary: fragment.boundary, prefix: fragment.prefix,
            prefixLength: fragment.prefixLength, body: fragment.body)
    }
}
