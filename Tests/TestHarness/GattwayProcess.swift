import Foundation

/// The built `gattway` executable as a child process, started in the package root (relative
/// configuration paths) as the leader of a process group of its own (as a shell starts a job).
public final class GattwayProcess: ChildProcess, @unchecked Sendable {
    /// `gattway` is built next to the test bundle (both in the build directory), unless
    /// `GATTWAY_EXECUTABLE` names another: the arm64 stage (Tests/deploy/arm64-test.sh) runs the
    /// cross-built package's binary under qemu-user that way.
    public static let gattway: URL = {
        if let path = ProcessInfo.processInfo.environment["GATTWAY_EXECUTABLE"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return buildDirectory.appendingPathComponent("gattway")
    }()

    /// `environment` is added to the test's own (without `JOURNAL_STREAM` and `NOTIFY_SOCKET`);
    /// `journalStandardError` makes the child's stderr look like systemd's journal stream.
    public init(_ arguments: [String], environment: [String: String] = [:], journalStandardError: Bool = false) {
        var merged = ProcessInfo.processInfo.environment
        merged.removeValue(forKey: "JOURNAL_STREAM")
        merged.removeValue(forKey: "NOTIFY_SOCKET")
        merged.merge(environment) { _, new in new }
        super.init(
            [Self.gattway.path] + arguments, environment: merged, directory: Harness.packageRoot, ownProcessGroup: true)
        if journalStandardError { self.environment?["JOURNAL_STREAM"] = standardErrorIdentity }
    }
}
