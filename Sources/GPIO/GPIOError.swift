/// Everything that can go wrong below the sensors, each case worded so the user knows what to do.
public enum GPIOError: Error, Equatable, CustomStringConvertible {
    /// No line with this name; `closest` are the most similar existing names.
    case lineNotFound(LineSelector, closest: [String])
    /// A Raspberry Pi's GPIO (`GPIO<n>`, `pin<k>`) on a kernel whose device tree gives the
    /// board no chip for its header (Debian trixie's kernel on a Pi 5); `chips` are those it has.
    case headerChipMissing(LineSelector, board: RaspberryPiBoard, chips: [String])
    /// The selector's chip matches no chip (by label, name or path).
    case chipNotFound(String, available: [String])
    /// The line is held by another consumer (EBUSY).
    case lineBusy(ResolvedLine, consumer: String)
    /// Opening a chip or requesting a line was refused (EACCES/EPERM).
    case permissionDenied(path: String)
    /// Any other failure of a system call, with the errno text.
    case system(operation: String, target: String, errno: Int32, message: String)
    /// A line was used after `release()`.
    case released(String)

    public var description: String {
        switch self {
        case .lineNotFound(let selector, let closest):
            let hint = closest.isEmpty ? "" : "; closest names: \(closest.joined(separator: ", "))"
            return "GPIO line \(selector) not found\(hint) (run `gattway lines` to list them)"
        case .headerChipMissing(let selector, let board, let chips):
            return "GPIO line \(selector) not found: \(board.missingHeaderChip(chips: chips))"
        case .chipNotFound(let chip, let available):
            return "GPIO chip \(chip) not found; chips: \(available.joined(separator: ", "))"
        case .lineBusy(let line, let consumer):
            let holder = consumer.isEmpty ? "another process" : "consumer \"\(consumer)\""
            return "GPIO line \(line) is busy: held by \(holder)"
        case .permissionDenied(let path):
            return "permission denied opening \(path): add the user to group `gpio` "
                + "(sudo usermod -aG gpio $USER, with the udev rules installed) and log in again"
        case .system(let operation, let target, let errno, let message):
            return "\(operation) \(target) failed: \(message) (errno \(errno))"
        case .released(let line):
            return "GPIO line \(line) was already released"
        }
    }
}
