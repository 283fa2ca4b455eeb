import BluetoothHCI
import EventLoop

/// The HCI command channel (Vol 4 Part E 4.4): one command in flight at a time, answered by its
/// Command Complete or Command Status, or failed after a timeout. Callers queue for the slot in
/// order.
///
/// Owned by `PeripheralHost` and used only on its executor, the event loop: a class, not an
/// actor, so the host's event handling resolves a command with a plain call.
final class HCICommandChannel {
    /// How long a command may go unanswered.
    let timeout: Duration
    /// The controller of the session under way; nil between sessions.
    private(set) var transport: (any HCITransport)?
    private var slotBusy = false
    private var slotWaiters: [CheckedContinuation<Void, Never>] = []
    private var pending: PendingCommand?
    private var nextToken: UInt64 = 0
    /// Times out the command in flight (made at the first command); cancelled when it is
    /// answered, so each command is timed from its own sending.
    private var timer: DeadlineTimer?

    init(timeout: Duration) {
        self.timeout = timeout
    }

    /// Commands go to `transport` from now on.
    func open(_ transport: any HCITransport) {
        self.transport = transport
    }

    /// The session ended: the command in flight fails, later ones fail until the next `open`.
    func close() {
        transport = nil
        if let pending {
            self.pending = nil
            timer?.cancel()
            pending.continuation.resume(throwing: HostError("the controller was lost"))
        }
    }

    /// Sends a command and waits for its Command Complete or Command Status, one command at a
    /// time; gives up after `timeout`.
    @discardableResult
    nonisolated(nonsending) func execute(_ command: HCICommand) async throws -> HCICommandResult {
        if slotBusy {
            // Checked again inside: the call may suspend before its body runs, and the command
            // holding the slot may give it up meanwhile; a waiter queued after that would wait
            // for a release that never comes, and with it every later command.
            await withCheckedContinuation { waiter in
                if slotBusy {
                    slotWaiters.append(waiter)
                } else {
                    slotBusy = true
                    waiter.resume()
                }
            }
        } else {
            slotBusy = true
        }
        defer {
            if slotWaiters.isEmpty {
                slotBusy = false
            } else {
                slotWaiters.removeFirst().resume()
            }
        }
        try Task.checkCancellation()
        guard let transport else { throw HostError("no controller") }
        nextToken += 1
        let token = nextToken
        return try await withCheckedThrowingContinuation { continuation in
            pending = PendingCommand(opcode: command.opcode, token: token, continuation: continuation)
            do {
                try transport.send(.command(command))
            } catch {
                finish(token: token, with: .failure(error))
                return
            }
            armTimer()
        }
    }

    /// Like `execute`, but a non-success status throws.
    @discardableResult
    nonisolated(nonsending) func executeChecked(_ command: HCICommand) async throws -> [UInt8] {
        let result = try await execute(command)
        guard result.status == .success else {
            throw HostError("\(command.opcode) failed: \(result.status)")
        }
        return result.body
    }

    // `commandComplete` and `commandStatus` are never inlined: a `PendingCommand` holds a
    // `CheckedContinuation`, whose size the standard library does not promise, so a caller that
    // inlines them sizes its stack frame from the type's metadata at run time, on every call. The
    // host's packet handler would pay that for every packet, the Number Of Completed Packets event
    // of each notification among them (docs/performance.md).

    /// A Command Complete event; false when it answers no command in flight.
    @inline(never)
    func commandComplete(_ opcode: HCIOpcode, returnParameters: [UInt8]) -> Bool {
        guard let pending, pending.opcode == opcode else { return false }
        finish(token: pending.token, with: .success(HCICommandResult(returnParameters: returnParameters)))
        return true
    }

    /// A Command Status event; false when it answers no command in flight.
    @inline(never)
    func commandStatus(_ opcode: HCIOpcode, status: HCIStatus) -> Bool {
        guard let pending, pending.opcode == opcode else { return false }
        finish(token: pending.token, with: .success(HCICommandResult(status: status)))
        return true
    }

    /// Resolves the command in flight if it is still the one `token` names.
    private func finish(token: UInt64, with result: Result<HCICommandResult, any Error>) {
        guard let pending, pending.token == token else { return }
        self.pending = nil
        timer?.cancel()
        pending.continuation.resume(with: result)
    }

    private func armTimer() {
        if timer == nil {
            // The timer runs on the loop, the executor of the host that owns this channel and
            // the only place the channel is used; the loop-bound reference checks that it does.
            let channel = LoopBound(WeakReference<HCICommandChannel>())
            channel.value.target = self
            timer = DeadlineTimer { _ in channel.value.target?.timedOut() }
        }
        timer?.schedule(after: timeout)
    }

    /// The command in flight was not answered within `timeout`.
    private func timedOut() {
        guard let pending else { return }
        finish(
            token: pending.token,
            with: .failure(HostError("\(pending.opcode) not answered within \(timeout)")))
    }
}

/// The command waiting for its Command Complete or Command Status.
struct PendingCommand {
    let opcode: HCIOpcode
    let token: UInt64
    let continuation: CheckedContinuation<HCICommandResult, any Error>
}
