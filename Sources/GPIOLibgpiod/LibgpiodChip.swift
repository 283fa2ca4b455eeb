import CGPIODShim
import FoundationEssentials
import GPIO
import Glibc
import Synchronization

/// An open GPIO chip: the only owner of a `gw_chip` pointer.
final class LibgpiodChip: @unchecked Sendable {
    // The pointer is only used under `lock`, since libgpiod objects are not thread-safe.
    let lock = Mutex(())
    let pointer: OpaquePointer
    let path: String

    init(path: String) throws {
        guard let pointer = gw_chip_open(path) else {
            throw LibgpiodErrors.fromErrno(errno, operation: "opening", target: path)
        }
        self.pointer = pointer
        self.path = path
    }

    deinit { gw_chip_close(pointer) }

    func info() throws -> ChipInfo {
        try lock.withLock { _ in
            var name = [CChar](repeating: 0, count: 64)
            var label = [CChar](repeating: 0, count: 64)
            var count: UInt32 = 0
            guard gw_chip_info(pointer, &name, name.count, &label, label.count, &count) == 0 else {
                throw LibgpiodErrors.fromErrno(errno, operation: "reading chip info of", target: path)
            }
            var lines: [LineInfo] = []
            lines.reserveCapacity(Int(count))
            for offset in 0..<count {
                var raw = gw_line_info()
                guard gw_chip_line_info(pointer, offset, &raw) == 0 else {
                    throw LibgpiodErrors.fromErrno(errno, operation: "reading line \(offset) of", target: path)
                }
                lines.append(LineInfo(raw, offset: Int(offset)))
            }
            return ChipInfo(path: path, name: Self.string(name), label: Self.string(label), lines: lines)
        }
    }

    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The consumer currently holding a line, for EBUSY messages.
    func consumer(of offset: Int) -> String {
        lock.withLock { _ in
            var raw = gw_line_info()
            guard gw_chip_line_info(pointer, UInt32(offset), &raw) == 0 else { return "" }
            return LineInfo(raw, offset: offset).consumer
        }
    }

    func request(_ line: ResolvedLine, consumer: String, config: gw_line_config) throws -> OpaquePointer {
        var config = config
        let (request, error): (OpaquePointer?, Int32) = lock.withLock { _ in
            let request = gw_line_request_open(pointer, UInt32(line.offset), consumer, &config)
            return (request, errno)
        }
        if let request { return request }
        if error == EBUSY { throw GPIOError.lineBusy(line, consumer: self.consumer(of: line.offset)) }
        throw LibgpiodErrors.fromErrno(error, operation: "requesting", target: "\(line)")
    }
}

enum LibgpiodErrors {
    static func fromErrno(_ code: Int32, operation: String, target: String) -> GPIOError {
        if code == EACCES || code == EPERM { return .permissionDenied(path: target) }
        return .system(operation: operation, target: target, errno: code, message: String(cString: strerror(code)))
    }
}

extension LineInfo {
    init(_ raw: gw_line_info, offset: Int) {
        var raw = raw
        let name = withUnsafeBytes(of: &raw.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let consumer = withUnsafeBytes(of: &raw.consumer) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let bias: GPIOBias =
            switch raw.bias {
            case Int32(GW_BIAS_PULL_UP.rawValue): .pullUp
            case Int32(GW_BIAS_PULL_DOWN.rawValue): .pullDown
            case Int32(GW_BIAS_DISABLED.rawValue): .disabled
            default: .asIs
            }
        self.init(
            offset: offset, name: name, consumer: consumer, used: raw.used,
            direction: raw.direction == Int32(GW_DIRECTION_OUTPUT.rawValue) ? .output : .input,
            activeLow: raw.active_low, bias: bias)
    }
}

extension GPIOBias {
    var shimValue: Int32 {
        switch self {
        case .asIs: Int32(GW_BIAS_AS_IS.rawValue)
        case .disabled: Int32(GW_BIAS_DISABLED.rawValue)
        case .pullUp: Int32(GW_BIAS_PULL_UP.rawValue)
        case .pullDown: Int32(GW_BIAS_PULL_DOWN.rawValue)
        }
    }
}

extension EdgeDetection {
    var shimValue: Int32 {
        switch self {
        case .none: Int32(GW_EDGE_NONE.rawValue)
        case .rising: Int32(GW_EDGE_RISING.rawValue)
        case .falling: Int32(GW_EDGE_FALLING.rawValue)
        case .both: Int32(GW_EDGE_BOTH.rawValue)
        }
    }
}
