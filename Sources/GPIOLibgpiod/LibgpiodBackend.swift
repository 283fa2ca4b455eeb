import CGPIODShim
import EventLoop
import FoundationEssentials
import GPIO
import Glibc
import Synchronization

/// GPIO through the kernel's character devices with libgpiod (v1 or v2, whichever the shim was
/// compiled against).
public final class LibgpiodBackend: GPIOBackend, @unchecked Sendable {
    private let deviceDirectory: String
    public let board: RaspberryPiBoard?
    /// Selectors already resolved: resolving reads every line of every chip, too slow to repeat
    /// between a DHT's start signal and its answer. Guarded by `lock`.
    private var resolved: [LineSelector: ResolvedLine] = [:]
    private let lock = Mutex(())

    /// - Parameters:
    ///   - deviceDirectory: where `gpiochipN` devices are looked for.
    ///   - deviceTreeDirectory: where the kernel shows the device tree's root node, whose `model`
    ///     and `compatible` say whether this is a Raspberry Pi (`board`).
    public init(deviceDirectory: String = "/dev", deviceTreeDirectory: String = "/proc/device-tree") {
        self.deviceDirectory = deviceDirectory
        func property(_ name: String) -> [UInt8] {
            FileManager.default.contents(atPath: "\(deviceTreeDirectory)/\(name)").map { [UInt8]($0) } ?? []
        }
        board = RaspberryPiBoard(modelProperty: property("model"), compatibleProperty: property("compatible"))
    }

    /// 1 or 2: the libgpiod API in use. On 1 debounce is done in software and lost events can
    /// only be inferred from impossible edge sequences.
    public static var apiMajor: Int { Int(gw_gpiod_api_major()) }
    public static var libraryVersion: String { String(cString: gw_gpiod_version()) }

    public func now() -> UInt64 { EventLoop.now().nanoseconds }

    /// Paths of the chip devices, in numeric order.
    public func chipPaths() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: deviceDirectory)) ?? []
        return names.filter { $0.hasPrefix("gpiochip") }
            .sorted { (Int($0.dropFirst(8)) ?? 0) < (Int($1.dropFirst(8)) ?? 0) }
            .map { "\(deviceDirectory)/\($0)" }
    }

    public func chips() throws -> [ChipInfo] {
        try chipPaths().map { try LibgpiodChip(path: $0).info() }
    }

    private func line(_ selector: LineSelector) throws -> ResolvedLine {
        if let line = lock.withLock({ _ in resolved[selector] }) { return line }
        let line = try resolve(selector)
        lock.withLock { _ in resolved[selector] = line }
        return line
    }

    public func requestInput(
        _ selector: LineSelector, consumer: String, settings: InputSettings,
        onReadable: @escaping @Sendable () -> Void
    ) throws -> any InputLine {
        let resolved = try line(selector)
        let chip = try LibgpiodChip(path: resolved.chip.path)
        let (config, softwareDebounce) = Self.inputConfig(settings)
        let request = try chip.request(resolved, consumer: consumer, config: config)
        return LibgpiodInputLine(
            chip: chip, request: request, line: resolved, settings: settings,
            softwareDebounce: softwareDebounce, onReadable: onReadable)
    }

    /// The shim's configuration for an input, and whether debounce is done in software (v1).
    static func inputConfig(_ settings: InputSettings) -> (config: gw_line_config, softwareDebounce: Bool) {
        let softwareDebounce = apiMajor == 1 && settings.debounce > .zero
        var config = gw_line_config()
        config.direction = Int32(GW_DIRECTION_INPUT.rawValue)
        config.bias = settings.bias.shimValue
        config.active_low = settings.activeLow
        // Software debounce needs every raw edge; the requested ones are picked after it.
        config.edge =
            (softwareDebounce && settings.edges != .none)
            ? EdgeDetection.both.shimValue
            : settings.edges.shimValue
        config.debounce_us = UInt32(clamping: settings.debounce.nanoseconds / 1000)
        config.event_buffer_size = UInt32(clamping: settings.eventBufferSize)
        return (config, softwareDebounce)
    }

    public func requestOutput(
        _ selector: LineSelector, consumer: String,
        settings: OutputSettings
    ) throws -> any OutputLine {
        let resolved = try line(selector)
        let chip = try LibgpiodChip(path: resolved.chip.path)
        var config = gw_line_config()
        config.direction = Int32(GW_DIRECTION_OUTPUT.rawValue)
        config.active_low = settings.activeLow
        config.initial_value = settings.initialValue ? 1 : 0
        // Sized now for a later switch to input: the kernel fixes it when the request is made.
        config.event_buffer_size = UInt32(clamping: settings.eventBufferSize)
        let request = try chip.request(resolved, consumer: consumer, config: config)
        return LibgpiodOutputLine(chip: chip, request: request, line: resolved, consumer: consumer, settings: settings)
    }
}
