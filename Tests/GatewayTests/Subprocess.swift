import Foundation

/// The built `gattway` executable, run as a child process with its output captured. Waiting
/// blocks on a condition signalled by the pipes and the exit, never by polling.
final class Subprocess: @unchecked Sendable {
    /// `gattway` is built next to the test bundle (both in the build directory).
    static let gattway: URL = {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("gattway")
    }()

    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private let process = Process()
    private let condition = NSCondition()
    private var stdoutData = Data()
    private var stderrData = Data()
    private var exited = false

    init(_ arguments: [String], environment: [String: String] = [:]) {
        process.executableURL = Self.gattway
        process.arguments = arguments
        process.currentDirectoryURL = Self.repositoryRoot
        var merged = ProcessInfo.processInfo.environment
        merged.removeValue(forKey: "JOURNAL_STREAM")
        merged.merge(environment) { _, new in new }
        process.environment = merged
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        out.fileHandleForReading.readabilityHandler = { [unowned self] handle in append(handle.availableData, toError: false) }
        err.fileHandleForReading.readabilityHandler = { [unowned self] handle in append(handle.availableData, toError: true) }
        process.terminationHandler = { [unowned self] _ in
            condition.lock()
            exited = true
            condition.broadcast()
            condition.unlock()
        }
    }

    private func append(_ data: Data, toError: Bool) {
        condition.lock()
        if toError { stderrData.append(data) } else { stdoutData.append(data) }
        condition.broadcast()
        condition.unlock()
    }

    func start() throws { try process.run() }

    var stdout: String { condition.lock(); defer { condition.unlock() }; return String(decoding: stdoutData, as: UTF8.self) }
    var stderr: String { condition.lock(); defer { condition.unlock() }; return String(decoding: stderrData, as: UTF8.self) }

    /// Waits until `predicate` holds for (stdout, stderr, exited) or the timeout passes.
    @discardableResult
    func wait(timeout: TimeInterval, until predicate: (String, String, Bool) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(String(decoding: stdoutData, as: UTF8.self), String(decoding: stderrData, as: UTF8.self),
                         exited) {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    /// Waits for the exit (and the pipes to drain); nil on timeout.
    func waitForExit(timeout: TimeInterval) -> Int32? {
        guard wait(timeout: timeout, until: { _, _, exited in exited }) else { return nil }
        process.waitUntilExit()
        // Collect what is still buffered in the pipes after the exit.
        for (pipe, isError) in [(process.standardOutput, false), (process.standardError, true)] {
            guard let handle = (pipe as? Pipe)?.fileHandleForReading else { continue }
            handle.readabilityHandler = nil
            append(handle.readDataToEndOfFile(), toError: isError)
        }
        return process.terminationStatus
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    func stop() { if process.isRunning { process.terminate() } }

    /// Runs to completion: (status, stdout, stderr).
    static func run(_ arguments: [String], timeout: TimeInterval = 30) throws -> (status: Int32?, stdout: String, stderr: String) {
        let child = Subprocess(arguments)
        try child.start()
        let status = child.waitForExit(timeout: timeout)
        if status == nil { child.stop() }
        return (status, child.stdout, child.stderr)
    }
}
