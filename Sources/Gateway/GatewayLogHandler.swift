import FoundationEssentials
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// gattway's swift-log handler: one line per event on stderr. Under systemd (stderr is the
/// journal, announced by `JOURNAL_STREAM`) lines carry a syslog `<N>` priority prefix and no
/// timestamp, since journald adds both its own timestamp and the priority field from the prefix;
/// on a terminal they carry a UTC timestamp and the level name.
public struct GatewayLogHandler: LogHandler {
    public enum Style: Sendable {
        case journal
        case terminal
    }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let style: Style
    private let emit: @Sendable (String) -> Void

    public init(
        label: String, level: Logger.Level, style: Style,
        write: @escaping @Sendable (String) -> Void = GatewayLogHandler.writeToStandardError
    ) {
        self.label = label
        self.logLevel = level
        self.style = style
        self.emit = write
    }

    /// Installs the handler for the whole process; call once, before the first logger is made.
    public static func bootstrap(
        level: Logger.Level,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        let style = styleForStandardError(environment: environment)
        LoggingSystem.bootstrap { label in GatewayLogHandler(label: label, level: level, style: style) }
    }

    /// `.journal` when `JOURNAL_STREAM` names the device and inode of our stderr (systemd sets it
    /// for the service; a child process with redirected stderr must not inherit the format).
    public static func styleForStandardError(environment: [String: String]) -> Style {
        guard let stream = environment["JOURNAL_STREAM"] else { return .terminal }
        let parts = stream.split(separator: ":")
        var status = stat()
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]),
            fstat(STDERR_FILENO, &status) == 0
        else { return .terminal }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode ? .journal : .terminal
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        if let error = event.error { merged["error"] = "\(error)" }
        emit(
            Self.format(
                level: event.level, label: label, message: "\(event.message)", metadata: merged,
                style: style, now: Date()) + "\n")
    }

    /// One log line, without the newline. Newlines inside the message are escaped so an event
    /// never spans lines.
    public static func format(
        level: Logger.Level, label: String, message: String, metadata: Logger.Metadata,
        style: Style, now: Date
    ) -> String {
        var text = "\(label): \(escape(message))"
        for key in metadata.keys.sorted() {
            text += " \(key)=\(quoteIfNeeded(escape("\(metadata[key]!)")))"
        }
        switch style {
        case .journal:
            return "<\(syslogPriority(level))>\(text)"
        case .terminal:
            return "\(timestamp(now)) \(level.rawValue.uppercased()) \(text)"
        }
    }

    /// syslog(3) priorities, as journald reads them from the `<N>` prefix.
    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    private static func escape(_ text: String) -> String {
        text.replacing("\\", with: "\\\\").replacing("\n", with: "\\n")
            .replacing("\r", with: "\\r")
    }

    private static func quoteIfNeeded(_ text: String) -> String {
        text.isEmpty || text.contains(" ") || text.contains("\"") || text.contains("=")
            ? "\"\(text.replacing("\"", with: "\\\""))\"" : text
    }

    private static func timestamp(_ date: Date) -> String {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        return date.formatted(style)
    }

    /// One `write(2)` per line, so concurrent events never interleave within a line.
    public static let writeToStandardError: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written > 0 {
                offset += written
            } else if written < 0, errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
