import BluetoothATT
import BluetoothGATT
import Foundation
import Values

/// Each characteristic's current value, served to reads, and the check of centrals' writes.
///
/// The GATT server's request handlers are synchronous and run inside the peripheral actor, so
/// they cannot await the pipeline actor: they read and write here, under a lock, and accepted
/// writes are handed to the pipeline as `CentralWrite`s through `writes`.
final class CharacteristicValues: @unchecked Sendable {
    struct Entry {
        let ref: CharacteristicRef
        let encoding: ValueEncoding
        var bytes: [UInt8]
    }

    private let lock = NSLock()
    // Guarded by `lock`.
    private var entries: [UInt16: Entry] = [:]
    private let writeContinuation: AsyncStream<CentralWrite>.Continuation
    let writes: AsyncStream<CentralWrite>

    init() {
        (writes, writeContinuation) = AsyncStream.makeStream(of: CentralWrite.self)
    }

    func register(_ ref: CharacteristicRef, valueHandle: UInt16, encoding: ValueEncoding, initial: [UInt8]) {
        lock.withLock { entries[valueHandle] = Entry(ref: ref, encoding: encoding, bytes: initial) }
    }

    func set(_ bytes: [UInt8], valueHandle: UInt16) {
        lock.withLock { entries[valueHandle]?.bytes = bytes }
    }

    func bytes(valueHandle: UInt16) -> [UInt8]? {
        lock.withLock { entries[valueHandle]?.bytes }
    }

    var handlers: GATTRequestHandlers {
        GATTRequestHandlers(read: { [self] request in read(request) }, write: { [self] batch in write(batch) })
    }

    private func read(_ request: GATTReadRequest) -> Result<[UInt8], ATTErrorCode> {
        guard let bytes = bytes(valueHandle: request.characteristic.valueHandle) else {
            return .failure(.unlikelyError)
        }
        return .success(bytes)
    }

    /// Checks every value of the batch against its characteristic's encoding (a part written at an
    /// offset completes the current value), then applies all of them, or none.
    private func write(_ batch: [GATTWriteRequest]) -> ATTErrorCode? {
        let accepted: [(UInt16, CentralWrite)]
        do {
            accepted = try lock.withLock {
                try batch.map { request throws(ATTErrorCode) -> (UInt16, CentralWrite) in
                    let handle = request.characteristic.valueHandle
                    guard let entry = entries[handle] else { throw .unlikelyError }
                    guard request.offset <= entry.bytes.count else { throw .invalidOffset }
                    let bytes = Array(entry.bytes.prefix(request.offset)) + request.value
                    let value: SensorValue
                    do throws(ValueError) {
                        value = try entry.encoding.decode(bytes)
                    } catch {
                        switch error {
                        case .wrongLength, .tooLong: throw .invalidAttributeValueLength
                        default: throw .valueNotAllowed
                        }
                    }
                    return (handle, CentralWrite(ref: entry.ref, central: request.central, value: value, bytes: bytes,
                                                 kind: request.kind))
                }
            }
        } catch let error as ATTErrorCode {
            return error
        } catch {
            return .unlikelyError
        }
        lock.withLock {
            for (handle, write) in accepted { entries[handle]?.bytes = write.bytes }
        }
        for (_, write) in accepted { writeContinuation.yield(write) }
        return nil
    }
}

/// A value a central wrote and the server accepted.
public struct CentralWrite: Sendable, Equatable {
    public let ref: CharacteristicRef
    public let central: CentralID
    public let value: SensorValue
    public let bytes: [UInt8]
    /// The ATT write that carried it (for MQTT's `/written`).
    public let kind: GATTWriteKind
}
