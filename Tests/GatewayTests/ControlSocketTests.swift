import EventLoop
import Foundation
import Gateway
import Testing
import TestHarness

/// The control socket's framing and file: JSON lines in, JSON lines out, in order; bad lines
/// answered with what is wrong; owner-only; a stale socket replaced, a live one left alone.
@Suite struct ControlSocketTests {
    /// Connects to `path`, sends `text`, returns the first `lines` answer lines.
    static func exchange(_ path: String, _ text: String, lines: Int) throws -> [String] {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try #require(UnixSocketAddress.with(path) { connect(descriptor, $0, $1) } == 0, "connect: errno \(errno)")
        _ = Array(text.utf8).withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        var received = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.filter({ $0 == "\n" }).count < lines {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            received += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return received.split(separator: "\n").map(String.init)
    }

    @Test func answersEachLineInOrderAndSaysWhatIsWrongWithABadOne() async throws {
        let directory = try temporaryDirectory("control").appendingPathComponent("run").path
        let control = try ControlSocket(runtimeDirectory: directory) { request in
            // The first answer is the slowest: answers must still come in request order.
            if request.command == .status { try? await Task.sleep(for: .milliseconds(200)) }
            return ControlResponse(bonds: ["\(request.command.rawValue) \(request.address ?? "-")"])
        }
        control.start()
        let answers = try Self.exchange(
            control.path,
            """
            {"command":"status"}
            {"command":"bonds.remove","address":"AA:BB:CC:DD:EE:FF"}
            not json
            {"command":"reboot"}
            {"address":"x"}

            """, lines: 5)
        #expect(
            answers == [
                #"{"bonds":["status -"]}"#, #"{"bonds":["bonds.remove AA:BB:CC:DD:EE:FF"]}"#,
                #"{"error":"not a request: not JSON"}"#,
                #"{"error":"not a request: unknown command (commands: status, bonds.list, bonds.remove, bonds.clear)"}"#,
                #"{"error":"not a request: \"command\" is missing"}"#
            ])
        var status = stat()
        #expect(stat(control.path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600, "only the owner may connect")
        #expect(stat(directory, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o700)

        #expect(throws: ControlSocket.Error.self, "another gattway answers there") {
            try ControlSocket(runtimeDirectory: directory) { _ in ControlResponse() }
        }
        await control.stop()
        #expect(access(control.path, F_OK) != 0, "stop removes the socket file")
    }

    /// A socket file nobody answers on (a service killed with SIGKILL leaves one) is replaced.
    @Test func aStaleSocketIsReplaced() async throws {
        let directory = try temporaryDirectory("control").path
        let path = ControlSocket.path(runtimeDirectory: directory)
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(UnixSocketAddress.with(path) { bind(stale, $0, $1) } == 0)
        close(stale)  // bound, never listening, closed: the file stays
        let control = try ControlSocket(runtimeDirectory: directory) { _ in ControlResponse(removed: 7) }
        control.start()
        #expect(try Self.exchange(path, "{\"command\":\"bonds.clear\"}\n", lines: 1) == [#"{"removed":7}"#])
        await control.stop()
    }
}
