import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothHCITransport
import EventLoop
import Logging
import StateFile
import Synchronization

/// gattway's BLE host in the peripheral role: opens the controller named by
/// `HostConfiguration.transport`, brings it up, advertises, accepts centrals and carries their
/// ATT traffic to and from an `ATTServer`, until the task running `run()` is cancelled. A lost
/// controller (socket error, hardware error, unexpected reset) is reopened with backoff.
///
///     let host = PeripheralHost(
///         configuration: configuration, server: gattServer, stateWriter: writer, logger: logger)
///     try await host.run()   // returns when cancelled
public actor PeripheralHost {
    /// On the event loop, with the other actors of the event path: calls between them run inline.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    public let configuration: HostConfiguration
    /// Writes the host's state files (bonds, the static random address), off the event loop.
    let stateWriter: StateFileWriter
    let server: any ATTServer
    let logger: Logger
    let openTransport: @Sendable (HCITransportSpec) throws -> any HCITransport

    public internal(set) var state: PeripheralState = .unknown
    public var isAdvertising: Bool { advertiser.isAdvertising }
    /// The controller's facts from the last bring-up.
    public internal(set) var controller: ControllerInfo? {
        didSet { localAddress = controller?.address ?? .zero }
    }
    /// The address centrals see, kept apart from `controller` so that an event, which needs only
    /// it, does not copy the whole description (and retain and release what it holds).
    private(set) var localAddress: BluetoothAddress = .zero
    /// Every event, in order, to the sink the program set (`setEventSink`).
    let eventSink = HostEventOutlet()

    // The components, each with one job and its own state, called only on the host's executor
    // (docs/architecture.md, "The host's components").
    /// ACL out, with flow control per connection.
    let transmitter = LinkTransmitter()
    /// One HCI command at a time, to the controller of the session under way.
    let commands: HCICommandChannel
    /// The connected centrals, LE signaling, the links' parameters, data length and PHY.
    let connections: ConnectionTable
    /// Legacy or extended advertising.
    let advertiser: Advertiser
    /// Pairing, encryption and bonds.
    let security: SecurityCoordinator
    /// The links' events and data: connections opening and closing, L2CAP frames to their
    /// channel, Number Of Completed Packets.
    let links: LinkDispatcher

    /// Follow-up commands run off the event path, cancelled when the session ends.
    var sessionTasks: [UInt64: Task<Void, Never>] = [:]
    var nextSessionTaskID: UInt64 = 0
    var grantedTransmitCredits = false

    public init(
        configuration: HostConfiguration, server: any ATTServer, stateWriter: StateFileWriter, logger: Logger,
        openTransport: @escaping @Sendable (HCITransportSpec) throws -> any HCITransport = {
            try $0.open()
        }
    ) {
        self.configuration = configuration
        self.stateWriter = stateWriter
        self.server = server
        self.logger = logger
        self.openTransport = openTransport
        commands = HCICommandChannel(timeout: configuration.commandTimeout)
        connections = ConnectionTable(
            transmitter: transmitter, commands: commands, preferredParameters: configuration.preferredConnection,
            eventSink: eventSink, logger: logger)
        advertiser = Advertiser(
            settings: configuration.advertising, commands: commands, maxCentrals: configuration.maxCentrals,
            eventSink: eventSink, logger: logger)
        security = SecurityCoordinator(
            configuration: configuration, server: server, transmitter: transmitter, connections: connections,
            eventSink: eventSink, stateWriter: stateWriter, logger: logger)
        links = LinkDispatcher(
            server: server, transmitter: transmitter, connections: connections, advertiser: advertiser,
            security: security, eventSink: eventSink, logger: logger)
    }

    /// From now on every event goes to `sink`, in the call that reported it, on the event loop;
    /// nil stops them. Set it before `run`: an event reported while none is set is dropped, not
    /// kept for later.
    public func setEventSink(_ sink: HostEventSink?) {
        eventSink.sink = sink
    }

    /// Runs the host until the calling task is cancelled; then closes the controller and returns.
    /// Call it from a task that prefers `EventLoop.shared` as its executor, as the gateway does:
    /// the controller's packets then reach the host on the loop's thread with no hop. Without the
    /// preference every packet detours through the global pool, and a busy pool delays answers
    /// past their command timeout.
    public func run() async {
        server.hostRunning(self)
        defer { server.hostRunning(nil) }
        var attempt = 0
        while !Task.isCancelled {
            let transport: any HCITransport
            do {
                transport = try openTransport(configuration.transport)
            } catch {
                let failure =
                    error as? HCITransportError
                    ?? HCITransportError(.unavailable, "\(error)")
                logger.error("cannot open the controller at \(configuration.transport): \(failure.message)")
                await setState(Self.state(after: failure))
                guard await backoff(&attempt) else { break }
                continue
            }
            logger.info("opened the controller at \(transport.spec)")
            let reason = await session(on: transport)
            transport.close()
            let reachedPowerOn = controller != nil
            await tearDownSession()
            if Task.isCancelled { break }
            logger.warning("lost the controller at \(transport.spec): \(reason); recovering")
            await setState(.resetting)
            if reachedPowerOn { attempt = 0 }  // it worked once: start the backoff over
            guard await backoff(&attempt) else { break }
        }
        _ = transmitter.stop()
        await setState(.unknown)
    }

    /// The state a failure to open the controller leaves the peripheral in.
    static func state(after failure: HCITransportError) -> PeripheralState {
        switch failure.kind {
        case .permissionDenied: .unauthorized
        case .rfkillBlocked: .poweredOff
        case .notFound: .unsupported
        case .busy, .unavailable, .linkLost: .resetting
        }
    }

    /// Sleeps the next backoff delay; false when cancelled meanwhile.
    private func backoff(_ attempt: inout Int) async -> Bool {
        let delays = configuration.reconnectDelays
        let delay = delays.isEmpty ? .seconds(1) : delays[min(attempt, delays.count - 1)]
        attempt += 1
        logger.info("retrying the controller in \(delay)")
        do {
            try await Task.sleep(for: delay)
            return true
        } catch {
            return false
        }
    }

    /// One controller session: bring-up, advertising, then events until the link breaks.
    /// Returns why it ended.
    private func session(on transport: any HCITransport) async -> String {
        commands.open(transport)
        // Children return why the session must end, or nil when they finished fine.
        return await withTaskGroup(of: String?.self) { group in
            group.addTask { await self.readPackets(from: transport) }
            group.addTask {
                do {
                    try await self.bringUp()
                    return nil
                } catch {
                    return Task.isCancelled ? "cancelled" : "bring-up failed: \(error)"
                }
            }
            while let outcome = await group.next() {
                if let reason = outcome {
                    group.cancelAll()
                    transport.close()
                    return reason
                }
            }
            return "cancelled"
        }
    }

    /// Handles the controller's packets until the link ends; returns why it ended. The transport
    /// hands each packet over on the loop's thread as it reads it, and the host, on that loop,
    /// handles it in the same call: no queue, task or executor switch per packet.
    private func readPackets(from transport: any HCITransport) async -> String {
        let outcome = SessionOutcome()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
                outcome.wait(continuation)
                transport.start(
                    // Strong: the transport lets the receiver go when it ends, and the host
                    // closes it after every session (a weak reference's cost:
                    // `FileDescriptorTransport`).
                    receive: { [self] packet in
                        guard !outcome.isDecided else { return }
                        if let loss = onLoop(with: packet, { $0.handle($1) }) { outcome.decide(loss) }
                    },
                    ended: { failure in outcome.decide(failure.map { "\($0)" } ?? "cancelled") })
            }
        } onCancel: {
            transport.close()
        }
    }

    /// Forgets the session: pending commands fail, every central is disconnected for the server.
    private func tearDownSession() async {
        commands.close()
        for task in sessionTasks.values { task.cancel() }
        sessionTasks = [:]
        controller = nil
        advertiser.sessionEnded()
        links.sessionEnded()
    }

    func setState(_ newState: PeripheralState) async {
        guard newState != state else { return }
        logger.info("peripheral state: \(state) → \(newState)")
        state = newState
        eventSink(.stateChanged(newState))
        server.hostStateChanged(newState)
    }

    // MARK: The program-facing surface

    // Do not await these from `ATTServer` callbacks: the host calls those from its event loop,
    // which must keep running to deliver the commands' answers.

    /// Starts (or restarts, with new settings) advertising. Only valid while powered on.
    public func startAdvertising(_ settings: AdvertisingSettings) async throws {
        guard state == .poweredOn else {
            throw HostError("cannot advertise while the peripheral is \(state)")
        }
        try await advertiser.start(settings, on: controller, connected: connections.count)
    }

    /// Replaces the advertised data (keeping interval and kind) without stopping: while advertising,
    /// the new advertising and scan response data go straight to the controller, which the Core
    /// allows for advertising in progress (Vol 4 Part E 7.8.7, 7.8.8, and 7.8.54 with complete
    /// data); later (re)starts use them too. For data that changes at run time, such as sensor
    /// values broadcast as service data. Fields that do not fit are logged when that changes.
    public func updateAdvertisingData(_ settings: AdvertisingSettings) async throws {
        try await advertiser.update(settings, on: state == .poweredOn ? controller : nil)
    }

    public func stopAdvertising() async throws {
        guard state == .poweredOn else {
            throw HostError("cannot stop advertising while the peripheral is \(state)")
        }
        try await advertiser.stop(on: controller)
    }

    /// Asks a central for connection parameters matching `latency`; the central decides.
    public func setDesiredConnectionLatency(_ latency: ConnectionLatency, for central: Central) throws {
        guard state == .poweredOn else {
            throw HostError("cannot change connection latency while the peripheral is \(state)")
        }
        guard let connection = connections[central.handle], connection.central == central else {
            throw HostError("\(central) is not connected")
        }
        connections.requestLatency(latency, on: connection)
    }

    /// Disconnects a central (reason: remote user terminated, as the peripheral ending it).
    public func disconnect(_ central: Central) async throws {
        guard let connection = connections[central.handle], connection.central == central else {
            throw HostError("\(central) is not connected")
        }
        try await commands.executeChecked(.disconnect(handle: central.handle, reason: .remoteUserTerminated))
    }

    /// The centrals connected now, in connection order.
    public var connectedCentrals: [Central] {
        connections.inOrder.map(\.central)
    }
}

/// How a session's link ended, decided once (by the first packet that means the controller is
/// lost, or by the transport ending) and handed to the session waiting for it.
private final class SessionOutcome: Sendable {
    private let state = Mutex<(reason: String?, waiting: CheckedContinuation<String, Never>?)>((nil, nil))
    /// Set, under `state`'s lock, when the reason is; read without the lock for every packet
    /// received, where the lock cost a lock-and-unlock pair (docs/performance.md).
    private let decided = Atomic<Bool>(false)

    var isDecided: Bool { decided.load(ordering: .acquiring) }

    func wait(_ continuation: CheckedContinuation<String, Never>) {
        let reason = state.withLock { state -> String? in
            if state.reason == nil { state.waiting = continuation }
            return state.reason
        }
        if let reason { continuation.resume(returning: reason) }
    }

    func decide(_ reason: String) {
        let waiting = state.withLock { state -> CheckedContinuation<String, Never>? in
            guard state.reason == nil else { return nil }
            state.reason = reason
            decided.store(true, ordering: .releasing)
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume(returning: reason)
    }
}
