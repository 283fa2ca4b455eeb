/// The Raspberry Pi's own numbering of its GPIOs, which holds whatever the kernel calls the lines.
///
/// `GPIO<n>` is BCM GPIO n: line n of the SoC's pin controller (`pinctrl-bcm2835` on a Pi 3 and
/// earlier, `pinctrl-bcm2711` on a Pi 4, the RP1's bank 0 on a Pi 5). Raspberry Pi OS's device
/// trees name those lines `GPIO0`…; the mainline trees Debian's kernel uses name some of them
/// after a function (`SDA1`, `GPIO_GCLK`, `SPI_CE0_N`) or not at all. `pin<k>` is physical pin k
/// of the 40-pin header, which every Pi since the Model B+ has, pin 7 being BCM GPIO 4.
///
/// These names are a fallback: a line that really carries the name, on any chip, comes first
/// (see `LineResolver`).
public enum RaspberryPiHeader {
    /// Labels of the SoC pin controllers whose line offsets are BCM numbers (Pi 3 and earlier,
    /// Pi 4, Pi 5), with how many of their lines count: the RP1's 54 lines are three banks, of
    /// which bank 0 (GPIO0–27) is the header's.
    static let pinControllers: [String: Int] = [
        "pinctrl-bcm2835": 54,
        "pinctrl-bcm2711": 58,
        "pinctrl-rp1": 28
    ]

    /// BCM GPIO number of each pin of the 40-pin header that is a GPIO; the others are power
    /// and ground.
    static let headerPins: [Int: Int] = [
        3: 2, 5: 3, 7: 4, 8: 14, 10: 15, 11: 17, 12: 18, 13: 27, 15: 22, 16: 23, 18: 24, 19: 10,
        21: 9, 22: 25, 23: 11, 24: 8, 26: 7, 27: 0, 28: 1, 29: 5, 31: 6, 32: 12, 33: 13, 35: 19,
        36: 16, 37: 26, 38: 20, 40: 21
    ]

    /// The BCM GPIO number `name` stands for: n for `GPIO<n>`, the pin's GPIO for `pin<k>` when
    /// pin k of the header is one; nil for any other name.
    public static func bcmNumber(_ name: String) -> Int? {
        if let n = decimal(name, after: "GPIO") { return n }
        if let pin = decimal(name, after: "pin") { return headerPins[pin] }
        return nil
    }

    /// The header pin wired to BCM GPIO `bcm`, if any.
    public static func headerPin(ofGPIO bcm: Int) -> Int? {
        headerPins.first { $0.value == bcm }?.key
    }

    /// Whether the chip labelled so is a Raspberry Pi SoC's pin controller (`GPIO<n>` is its
    /// line n).
    public static func isPinController(label: String) -> Bool { pinControllers[label] != nil }

    /// Whether `chip` is the SoC's pin controller, whose line `n` is BCM GPIO n for every n below
    /// the returned count; nil for any other chip.
    static func bcmLineCount(of chip: ChipInfo) -> Int? {
        pinControllers[chip.label].map { min($0, chip.lines.count) }
    }

    /// The number in `name` after `prefix`, written plainly (`GPIO4`, not `GPIO04` or `GPIO+4`).
    private static func decimal(_ name: String, after prefix: String) -> Int? {
        guard name.hasPrefix(prefix) else { return nil }
        let digits = name.dropFirst(prefix.count)
        guard let n = Int(digits), String(n) == digits else { return nil }
        return n
    }
}

/// The Raspberry Pi a device tree describes (`/proc/device-tree/model` and `compatible`): what
/// says which chip should carry its header when the kernel shows none.
public struct RaspberryPiBoard: Sendable, Equatable {
    /// As the device tree says it, e.g. `Raspberry Pi 5 Model B Rev 1.0`.
    public var model: String
    /// The label of the chip that carries the header's GPIOs on this board.
    public var headerChipLabel: String

    /// Nil unless the device tree is a Raspberry Pi's. `compatible` is the device tree's list,
    /// most specific first (`raspberrypi,5-model-b`, `brcm,bcm2712`).
    public init?(model: String, compatible: [String]) {
        let isPi = model.hasPrefix("Raspberry Pi") || compatible.contains { $0.hasPrefix("raspberrypi,") }
        guard isPi else { return nil }
        self.model = model.isEmpty ? "Raspberry Pi" : model
        if compatible.contains("brcm,bcm2712") {
            headerChipLabel = "pinctrl-rp1"
        } else if compatible.contains("brcm,bcm2711") || compatible.contains("brcm,bcm2838") {
            headerChipLabel = "pinctrl-bcm2711"
        } else {
            headerChipLabel = "pinctrl-bcm2835"
        }
    }

    /// The device tree's `model` and `compatible` properties as the kernel shows them under
    /// /proc/device-tree: NUL-terminated strings.
    public init?(modelProperty: [UInt8], compatibleProperty: [UInt8]) {
        func strings(_ bytes: [UInt8]) -> [String] {
            bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        }
        self.init(model: strings(modelProperty).first ?? "", compatible: strings(compatibleProperty))
    }

    /// Why the header cannot be used on a kernel that shows no chip for it, and what to do:
    /// `chips` are the chips it shows, listed when given.
    public func missingHeaderChip(chips: [String]? = nil) -> String {
        let present = chips.map { $0.isEmpty ? "; no GPIO chip at all" : "; chips: \($0.joined(separator: ", "))" } ?? ""
        let advice =
            headerChipLabel == "pinctrl-rp1"
            ? "a newer Debian kernel whose Pi 5 device tree has the RP1 (mainline Linux 6.17 or later)"
            : "a kernel whose device tree has this board's GPIO controller"
        return "this kernel's device tree gives the \(model) no GPIO chip for its header "
            + "(no \(headerChipLabel) chip\(present)). To use the header, boot the Raspberry Pi OS kernel, "
            + "or \(advice)"
    }
}
