import FoundationEssentials
import Glibc
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
        guard child.readLine()?.hasPrefix("READY ") == true else {
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
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<PhoneConversation>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, Unmanaged.passRetained(conversation).toOpaque())
        guard created == 0 else { throw DemoFailure("the phone's thread cannot start") }
        pthread_detach(thread)
        try? await gracefulShutdown()
        phone.stop()
    }
}

/// The phone's script, one JSON command per line, one JSON reply per line (Tests/harness/phone.py).
final class PhoneConversation: @unchecked Sendable {
    private let phone: DemoChild
    private let name: String
    private let print: @Sendable (String) -> Void

    init(phone: DemoChild, name: String, print: @escaping @Sendable (String) -> Void) {
        self.phone = phone
        self.name = name
        self.print = print
    }

    /// A command; absent arguments are left out of the JSON.
    private struct Command: Encodable {
        var cmd: String
        var name: String?
        var timeout: Int?
        var address: String?
        var handle: Int?
        var indicate: Bool?
        var count: Int?
    }

    /// The parts of the phone's replies the demo prints.
    private struct Reply: Decodable {
        struct Service: Decodable {
            var uuid: String
            var characteristics: [Characteristic]?
        }
        struct Characteristic: Decodable {
            var uuid: String
            var valueHandle: Int
            var properties: Int

            enum CodingKeys: String, CodingKey {
                case uuid
                case valueHandle = "value_handle"
                case properties
            }
        }
        struct Update: Decodable {
            var handle: Int
            var value: String
        }
        var ok: Bool?
        var error: String?
        var address: String?
        var services: [Service]?
        var values: [Update]?
    }

    func run() {
        guard reply()?.ok == true else { return }
        var found: Reply?
        while found == nil {
            guard let answer = call(Command(cmd: "scan", name: name, timeout: 3)) else { return }
            if answer.ok == true { found = answer }
        }
        guard let address = found?.address else { return }
        print("phone found \"\(name)\" at \(address)")
        let connected = call(Command(cmd: "connect", address: address))
        guard connected?.ok == true else {
            print("phone could not connect: \(connected?.error ?? "no answer")")
            return
        }
        print("phone connected")
        guard let services = call(Command(cmd: "discover"))?.services else { return }
        var names: [Int: String] = [:]
        for service in services {
            print("phone service \(service.uuid)")
            for characteristic in service.characteristics ?? [] {
                let handle = characteristic.valueHandle
                let properties = characteristic.properties
                print(
                    "phone   characteristic \(characteristic.uuid) handle \(handle) properties 0x\(String(properties, radix: 16))"
                )
                guard properties & 0x30 != 0 else { continue }
                names[handle] = characteristic.uuid
                _ = call(Command(cmd: "subscribe", handle: handle, indicate: properties & 0x10 == 0))
            }
        }
        print("phone subscribed to \(names.count) characteristics")
        while let answer = call(Command(cmd: "notifications", timeout: 30, count: 1)) {
            for update in answer.values ?? [] {
                print("phone notification \(names[update.handle] ?? "handle \(update.handle)") \(update.value)")
            }
        }
    }

    private func call(_ command: Command) -> Reply? {
        guard let json = try? JSONEncoder().encode(command),
            phone.writeLine(String(decoding: json, as: UTF8.self))
        else { return nil }
        return reply()
    }

    /// The next reply; nil when the phone has gone (a line that is not a reply ends it too).
    private func reply() -> Reply? {
        guard let line = phone.readLine() else { return nil }
        return try? JSONDecoder().decode(Reply.self, from: Data(line.utf8))
    }
}
