import EventLoop
import Foundation
import Gateway
import TestHarness
import Testing

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
                #"{"error":"not a request: unknown command (commands: status, bonds.list, bonds.remove, bonds.clear, reload, pair, pair.close)"}"#,
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

    /// A runtime directory another user could write, or owned by another user, is refused: whoever
    /// can write it could put their own socket in the service's place.
    @Test func aRuntimeDirectoryOthersCanWriteOrOwnIsRefused() throws {
        let parent = try temporaryDirectory("control")
        let open = parent.appendingPathComponent("open").path
        #expect(mkdir(open, 0o700) == 0 && chmod(open, 0o777) == 0)
        #expect {
            try ControlSocket(runtimeDirectory: open) { _ in ControlResponse() }
        } throws: { error in
            "\(error)" == "runtime_dir \(open) is writable by group or others (mode 0777); refusing to put the control "
                + "socket there (chown it to the service's user and chmod 0700, or remove it so gattway makes it)"
        }
        let foreign = parent.appendingPathComponent("foreign").path
        #expect(mkdir(foreign, 0o700) == 0 && chown(foreign, 65534, 65534) == 0)
        #expect {
            try ControlSocket(runtimeDirectory: foreign) { _ in ControlResponse() }
        } throws: { error in
            "\(error)".hasPrefix("runtime_dir \(foreign) is owned by uid 65534, not the service's uid \(geteuid());")
        }
        #expect(access(ControlSocket.path(runtimeDirectory: open), F_OK) != 0, "no socket was made")
    }

    /// The peer's credentials (SO_PEERCRED), not only the file modes: with the modes loosened by
    /// hand, a process of another user connects, and is answered with a refusal, never served.
    /// It needs root, to run the client as another user, and python3 for that client: the main
    /// test stage has both; the Debian 13 root of the userland stage has no python3.
    @Test(.enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func aPeerThatIsNeitherRootNorTheServiceUserIsRefused() async throws {
        // Under /tmp itself: the test run's TMPDIR (mktemp -d, mode 0700) is closed to the other user.
        let parent = URL(fileURLWithPath: "/tmp/gattway-test-peer-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: parent) }
        let directory = parent.appendingPathComponent("run").path
        let control = try ControlSocket(runtimeDirectory: directory) { _ in ControlResponse(removed: 3) }
        control.start()
        defer { Task { await control.stop() } }
        #expect(chmod(parent.path, 0o755) == 0 && chmod(directory, 0o755) == 0 && chmod(control.path, 0o777) == 0)
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        client.arguments = [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
            """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
            s.sendall(b'{"command":"bonds.clear"}\\n'); print(s.makefile().readline(), end="")
            """, control.path
        ]
        let output = Pipe()
        let errors = Pipe()
        client.standardOutput = output
        client.standardError = errors
        try client.run()
        let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(
            answer == #"{"error":"refused: uid 65534 is neither root nor gattway's user (uid \#(geteuid()))"}"# + "\n",
            "\(problems)")
        #expect(try Self.exchange(control.path, "{\"command\":\"bonds.clear\"}\n", lines: 1) == [#"{"removed":3}"#], "root is served")
        #expect(ControlSocket.permits(peerUID: 0, serviceUID: 998) && ControlSocket.permits(peerUID: 998, serviceUID: 998))
        #expect(!ControlSocket.permits(peerUID: 1000, serviceUID: 998))
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
