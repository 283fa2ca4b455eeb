import Foundation
import Logging
import ServiceLifecycle

/// Where the demo finds the Bluetooth harness: Python with Bumble (`GATTWAY_PYTHON`, else
/// `<repo>/.venv/bin/python3`) and the scripts in `<repo>/Tests/harness`.
public struct DemoHarness: Sendable {
    public let python: String
    public let directory: String

    /// The harness under `repository`, or a failure saying what is missing and how to get it.
    public static func locate(
        repository: String = FileManager.default.currentDirectoryPath,
        environment: [String: String] = ProcessInfo.processInfo.environment
    )
        throws -> DemoHarness
    {
        let python = environment["GATTWAY_PYTHON"] ?? repository + "/.venv/bin/python3"
        let directory = repository + "/Tests/harness"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw DemoFailure(
                """
                no Python with Bumble at \(python): run deploy/dev/install-deps.sh (or set GATTWAY_PYTHON); \
                the demo runs without the virtual controller and the phone view
                """)
        }
        guard FileManager.default.fileExists(atPath: directory + "/virtual_controller.py") else {
            throw DemoFailure("no \(directory)/virtual_controller.py: run the demo from the repository root")
        }
        return DemoHarness(python: python, directory: directory)
    }
}

/// The demo's radio: the harness's virtual controller listening on the configured port.
public final class DemoController: Sendable {
    private let child: DemoChild

    /// Returns once the controller listens (it prints `READY tcp=<port> …`), so the gateway and
    /// the phone find it at their first attempt.
    public init(harness: DemoHarness, port: UInt16) throws {
        child = try DemoChild(
            executable: harness.python,
            arguments: [
                harness.directory + "/virtual_controller.py", "--tcp-port", "\(port)", "--exit-with-stdin"
            ], pipes: true)
        var line = Data()
        while let output = child.output, let byte = try? output.read(upToCount: 1), let first = byte.first,
            first != 0x0A
        {
            line.append(first)
        }
        guard String(decoding: line, as: UTF8.self).hasPrefix("READY ") else {
            child.stop()
            throw DemoFailure("the virtual controller did not start on port \(port) (is the port in use?)")
        }
    }

    public func stop() { child.stop() }
}

/// The demo's phone: a Bumble central (Tests/harness/phone.py) on the virtual controller that
/// finds the gateway by name, connects, discovers, subscribes to every characteristic that
/// notifies or indicates, and prints each step and every notification as `phone …` lines.
public struct DemoPhoneView: Service {
    private let harness: DemoHarness
    private let controller: String
    private let name: String
    private let print: @Sendable (String) -> Void

    /// - Parameters:
    ///   - controller: `tcp:HOST:PORT` of the virtual controller.
    ///   - name: the advertised local name to look for.
    public init(
        harness: DemoHarness, controller: String, name: String,
        print: @escaping @Sendable (String) -> Void = MQTTTrafficView.writeLine
    ) {
        self.harness = harness
        self.controller = controller
        self.name = name
        self.print = print
    }

    public func run() async throws {
        let phone = try DemoChild(
            executable: harness.python,
            arguments: [harness.directory + "/phone.py", controller], pipes: true)
        // The conversation is blocking line I/O, so it gets a thread of its own; stopping the
        // phone closes its pipe, which ends the conversation.
        let conversation = PhoneConversation(phone: phone, name: name, print: print)
        Thread { conversation.run() }.start()
        try? await gracefulShutdown()
        phone.stop()
    }
}

/// The phone's script, one JSON command per line, one JSON reply per line.
final class PhoneConversation: @unchecked Sendable {
    private let phone: DemoChild
    private let name: String
    private let print: @Sendable (String) -> Void
    private var buffer = Data()

    init(phone: DemoChild, name: String, print: @escaping @Sendable (String) -> Void) {
        self.phone = phone
        self.name = name
        self.print = print
    }

    func run() {
        guard let hello = reply(), hello["ok"] as? Bool == true else { return }
        var found: [String: Any]?
        while found == nil {
            guard let answer = call(["cmd": "scan", "name": name, "timeout": 3]) else { return }
            if answer["ok"] as? Bool == true { found = answer }
        }
        guard let address = found?["address"] as? String else { return }
        print("phone found \"\(name)\" at \(address)")
        let connected = call(["cmd": "connect", "address": address])
        guard connected?["ok"] as? Bool == true else {
            print("phone could not connect: \(connected?["error"] as? String ?? "no answer")")
            return
        }
        print("phone connected")
        guard let discovered = call(["cmd": "discover"]), let services = discovered["services"] as? [[String: Any]] else {
            return
        }
        var names: [Int: String] = [:]
        for service in services {
            print("phone service \(service["uuid"] ?? "?")")
            for characteristic in service["characteristics"] as? [[String: Any]] ?? [] {
                let uuid = characteristic["uuid"] as? String ?? "?"
                let handle = characteristic["value_handle"] as? Int ?? 0
                let properties = characteristic["properties"] as? Int ?? 0
                print("phone   characteristic \(uuid) handle \(handle) properties 0x\(String(properties, radix: 16))")
                guard properties & 0x30 != 0 else { continue }
                names[handle] = uuid
                _ = call(["cmd": "subscribe", "handle": handle, "indicate": properties & 0x10 == 0])
            }
        }
        print("phone subscribed to \(names.count) characteristics")
        while let answer = call(["cmd": "notifications", "count": 1, "timeout": 30]) {
            for value in answer["values"] as? [[String: Any]] ?? [] {
                let handle = value["handle"] as? Int ?? 0
                print("phone notification \(names[handle] ?? "handle \(handle)") \(value["value"] ?? "")")
            }
        }
    }

    private func call(_ command: [String: Any]) -> [String: Any]? {
        guard let input = phone.input, let data = try? JSONSerialization.data(withJSONObject: command) else { return nil }
        do {
            try input.write(contentsOf: data + Data([0x0A]))
        } catch {
            return nil
        }
        return reply()
    }

    private func reply() -> [String: Any]? {
        guard let output = phone.output else { return nil }
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                return (try? JSONSerialization.jsonObject(with: line)) as? [String: Any]
            }
            let chunk = output.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}
