import Testing

@testable import GPIO

/// `GPIO<n>` and `pin<k>` on the chips each kernel shows a Raspberry Pi: Raspberry Pi OS's device
/// trees (lines named `GPIO0`…), the mainline trees Debian's kernel uses (some lines named after
/// a function), unnamed lines, and chips that are not the SoC's.
@Suite struct RaspberryPiLineNameTests {
    /// The header lines (BCM 0–27) as the mainline Pi 3 and Pi 4 device trees name them.
    static let mainlineHeaderNames = [
        "ID_SDA", "ID_SCL", "SDA1", "SCL1", "GPIO_GCLK", "GPIO5", "GPIO6", "SPI_CE1_N", "SPI_CE0_N",
        "SPI_MISO", "SPI_MOSI", "SPI_SCLK", "GPIO12", "GPIO13", "TXD1", "RXD1", "GPIO16", "GPIO17",
        "GPIO18", "GPIO19", "GPIO20", "GPIO21", "GPIO22", "GPIO23", "GPIO24", "GPIO25", "GPIO26", "GPIO27"
    ]

    static func chip(_ number: Int, label: String, names: [String]) -> ChipInfo {
        ChipInfo(
            path: "/dev/gpiochip\(number)", name: "gpiochip\(number)", label: label,
            lines: names.enumerated().map { LineInfo(offset: $0, name: $1) })
    }

    static let raspberryPiOS = chip(0, label: "pinctrl-bcm2835", names: (0..<54).map { "GPIO\($0)" })
    static let mainline = chip(
        0, label: "pinctrl-bcm2711", names: mainlineHeaderNames + ["RGMII_MDIO", "RGMIO_MDC", "CTS0"] + Array(repeating: "", count: 27))
    static let unnamedRP1 = chip(0, label: "pinctrl-rp1", names: Array(repeating: "", count: 54))
    static let firmwareGPIO = chip(
        1, label: "raspberrypi-exp-gpio", names: ["BT_ON", "WL_ON", "PWR_LED_OFF", "GLOBAL_RESET", "", "", "", ""])

    func resolve(
        _ name: String, chip: String? = nil, in chips: [ChipInfo], board: RaspberryPiBoard? = nil
    ) throws
        -> (String, Int, String)
    {
        let line = try LineResolver.resolve(LineSelector(name, chip: chip), in: chips, board: board)
        return (line.chip.label, line.offset, line.name)
    }

    @Test func raspberryPiOSNamesAreFoundAsTheyAre() throws {
        let chips = [Self.raspberryPiOS, Self.firmwareGPIO]
        #expect(try resolve("GPIO4", in: chips) == ("pinctrl-bcm2835", 4, "GPIO4"))
        #expect(try resolve("GPIO2", in: chips) == ("pinctrl-bcm2835", 2, "GPIO2"))
        #expect(try resolve("pin7", in: chips) == ("pinctrl-bcm2835", 4, "pin7"))
        #expect(try resolve("BT_ON", in: chips) == ("raspberrypi-exp-gpio", 0, "BT_ON"))
    }

    @Test func mainlineNamesStillAnswerToTheBCMNumber() throws {
        let chips = [Self.mainline, Self.firmwareGPIO]
        #expect(try resolve("GPIO4", in: chips) == ("pinctrl-bcm2711", 4, "GPIO4"))
        #expect(try resolve("GPIO2", in: chips) == ("pinctrl-bcm2711", 2, "GPIO2"))
        #expect(try resolve("GPIO8", in: chips) == ("pinctrl-bcm2711", 8, "GPIO8"))
        #expect(try resolve("GPIO14", in: chips) == ("pinctrl-bcm2711", 14, "GPIO14"))
        #expect(try resolve("GPIO57", in: chips) == ("pinctrl-bcm2711", 57, "GPIO57"))
        // The kernel's own names keep working.
        #expect(try resolve("GPIO_GCLK", in: chips) == ("pinctrl-bcm2711", 4, "GPIO_GCLK"))
        #expect(try resolve("GPIO17", in: chips) == ("pinctrl-bcm2711", 17, "GPIO17"))
        #expect(try resolve("pin3", in: chips) == ("pinctrl-bcm2711", 2, "pin3"))
        #expect(try resolve("pin40", in: chips) == ("pinctrl-bcm2711", 21, "pin40"))
        #expect(try resolve("GPIO4", chip: "pinctrl-bcm2711", in: chips) == ("pinctrl-bcm2711", 4, "GPIO4"))
        #expect(try resolve("GPIO4", chip: "gpiochip0", in: chips) == ("pinctrl-bcm2711", 4, "GPIO4"))
        #expect(throws: GPIOError.self) { try resolve("GPIO58", in: chips) }
    }

    @Test func unnamedLinesOfThePi5sRP1AreFoundByOffsetInBankZeroOnly() throws {
        let chips = [Self.unnamedRP1]
        #expect(try resolve("GPIO0", in: chips) == ("pinctrl-rp1", 0, "GPIO0"))
        #expect(try resolve("GPIO27", in: chips) == ("pinctrl-rp1", 27, "GPIO27"))
        #expect(try resolve("pin13", in: chips) == ("pinctrl-rp1", 27, "pin13"))
        #expect(throws: GPIOError.lineNotFound(LineSelector("GPIO28"), closest: [])) { try resolve("GPIO28", in: chips) }
    }

    @Test func aRealNameAnywhereWinsOverTheAlias() throws {
        // An I/O expander whose line 3 is really called GPIO4, after the SoC's chip.
        let expander = Self.chip(2, label: "mcp23017", names: ["GPA0", "GPA1", "GPA2", "GPIO4"])
        let chips = [Self.mainline, Self.firmwareGPIO, expander]
        #expect(try resolve("GPIO4", in: chips) == ("mcp23017", 3, "GPIO4"))
        // The SoC's line 4 is still there under the kernel's name and its header pin.
        #expect(try resolve("GPIO_GCLK", in: chips) == ("pinctrl-bcm2711", 4, "GPIO_GCLK"))
        #expect(try resolve("pin7", in: chips) == ("pinctrl-bcm2711", 4, "pin7"))
        #expect(try resolve("GPIO5", in: chips) == ("pinctrl-bcm2711", 5, "GPIO5"))
        // A kernel that gives BCM 17's name to another line of the SoC's chip is taken at its word.
        var renamed = Self.mainline
        renamed.lines[30].name = "GPIO17"
        renamed.lines[17].name = "SOMETHING_ELSE"
        #expect(try resolve("GPIO17", in: [renamed]) == ("pinctrl-bcm2711", 30, "GPIO17"))
    }

    @Test func chipsOtherThanTheSoCsNeverAnswerToTheAlias() throws {
        let sim = Self.chip(0, label: "gpio-sim.0-node0", names: Array(repeating: "", count: 8))
        #expect(throws: GPIOError.lineNotFound(LineSelector("GPIO4"), closest: [])) { try resolve("GPIO4", in: [sim]) }
        #expect(throws: GPIOError.self) { try resolve("pin7", in: [sim, Self.firmwareGPIO]) }
        // Restricted to another chip, the SoC's line is not taken either.
        #expect(throws: GPIOError.self) { try resolve("GPIO4", chip: "raspberrypi-exp-gpio", in: [Self.mainline, Self.firmwareGPIO]) }
        // Without a board, a missing SoC chip is a missing line as before.
        #expect(throws: GPIOError.lineNotFound(LineSelector("GPIO4"), closest: [])) { try resolve("GPIO4", in: []) }
    }

    @Test func onAPiWithoutTheHeadersChipTheErrorSaysWhatToBoot() throws {
        let pi5 = try #require(
            RaspberryPiBoard(model: "Raspberry Pi 5 Model B Rev 1.0", compatible: ["raspberrypi,5-model-b", "brcm,bcm2712"]))
        let brcmstb = Self.chip(0, label: "107d508500.gpio", names: Array(repeating: "", count: 32))
        let error = #expect(throws: GPIOError.self) { try resolve("GPIO4", in: [brcmstb], board: pi5) }
        #expect(error == .headerChipMissing(LineSelector("GPIO4"), board: pi5, chips: ["gpiochip0 [107d508500.gpio]"]))
        #expect(
            error?.description
                == "GPIO line GPIO4 not found: this kernel's device tree gives the Raspberry Pi 5 Model B Rev 1.0 "
                + "no GPIO chip for its header (no pinctrl-rp1 chip; chips: gpiochip0 [107d508500.gpio]). To use the "
                + "header, boot the Raspberry Pi OS kernel, or a newer Debian kernel whose Pi 5 device tree has the RP1 "
                + "(mainline Linux 6.17 or later)")
        #expect(throws: GPIOError.headerChipMissing(LineSelector("pin7"), board: pi5, chips: [])) {
            try resolve("pin7", in: [], board: pi5)
        }
        // Other names are plainly missing; a real line named GPIO4 is still found.
        #expect(throws: GPIOError.lineNotFound(LineSelector("DOOR"), closest: [])) { try resolve("DOOR", in: [brcmstb], board: pi5) }
        let expander = Self.chip(2, label: "mcp23017", names: ["GPIO4"])
        #expect(try resolve("GPIO4", in: [expander], board: pi5) == ("mcp23017", 0, "GPIO4"))
        // With the SoC's chip present, the board changes nothing.
        #expect(try resolve("GPIO4", in: [Self.unnamedRP1], board: pi5) == ("pinctrl-rp1", 4, "GPIO4"))
    }

    @Test func theBoardIsReadFromTheDeviceTreesModelAndCompatible() throws {
        func board(_ model: String, _ compatible: String) -> RaspberryPiBoard? {
            RaspberryPiBoard(modelProperty: Array(model.utf8) + [0], compatibleProperty: Array(compatible.utf8) + [0])
        }
        let pi3 = try #require(board("Raspberry Pi 3 Model B Rev 1.2", "raspberrypi,3-model-b\0brcm,bcm2837"))
        #expect(pi3.model == "Raspberry Pi 3 Model B Rev 1.2")
        #expect(pi3.headerChipLabel == "pinctrl-bcm2835")
        #expect(board("Raspberry Pi 4 Model B Rev 1.4", "raspberrypi,4-model-b\0brcm,bcm2711")?.headerChipLabel == "pinctrl-bcm2711")
        #expect(board("Raspberry Pi 5 Model B Rev 1.0", "raspberrypi,5-model-b\0brcm,bcm2712")?.headerChipLabel == "pinctrl-rp1")
        #expect(
            board("Raspberry Pi Compute Module 5 Rev 1.0", "raspberrypi,5-compute-module\0brcm,bcm2712")?.headerChipLabel == "pinctrl-rp1")
        #expect(board("QEMU KVM Virtual Machine", "linux,dummy-virt") == nil)
        #expect(board("Pine64 RockPro64", "pine64,rockpro64\0rockchip,rk3399") == nil)
        #expect(RaspberryPiBoard(modelProperty: [], compatibleProperty: []) == nil)
    }

    @Test func gpioAndPinNamesAreReadStrictly() {
        #expect(RaspberryPiHeader.bcmNumber("GPIO4") == 4)
        #expect(RaspberryPiHeader.bcmNumber("GPIO53") == 53)
        #expect(RaspberryPiHeader.bcmNumber("pin7") == 4)
        #expect(RaspberryPiHeader.bcmNumber("pin27") == 0)
        #expect(RaspberryPiHeader.bcmNumber("pin40") == 21)
        for name in ["GPIO04", "gpio4", "GPIO+4", "GPIO", "GPIO_GCLK", "pin1", "pin6", "pin41", "pin07", "PIN7", "SDA1"] {
            #expect(RaspberryPiHeader.bcmNumber(name) == nil, "\(name)")
        }
        #expect(RaspberryPiHeader.headerPin(ofGPIO: 4) == 7)
        #expect(RaspberryPiHeader.headerPin(ofGPIO: 28) == nil)
    }

    @Test func aliasesAreListedOnlyWhereTheyFindTheLine() {
        let chips = [Self.mainline, Self.firmwareGPIO]
        #expect(LineResolver.aliases(ofLine: 4, on: Self.mainline, among: chips) == ["GPIO4", "pin7"])
        #expect(LineResolver.aliases(ofLine: 17, on: Self.mainline, among: chips) == ["pin11"])
        #expect(LineResolver.aliases(ofLine: 40, on: Self.mainline, among: chips) == ["GPIO40"])
        #expect(LineResolver.aliases(ofLine: 4, on: Self.raspberryPiOS, among: [Self.raspberryPiOS]) == ["pin7"])
        #expect(LineResolver.aliases(ofLine: 0, on: Self.firmwareGPIO, among: chips).isEmpty)
        #expect(LineResolver.aliases(ofLine: 30, on: Self.unnamedRP1, among: [Self.unnamedRP1]).isEmpty)
        let expander = Self.chip(2, label: "mcp23017", names: ["GPIO4"])
        #expect(LineResolver.aliases(ofLine: 4, on: Self.mainline, among: chips + [expander]) == ["pin7"])
    }
}
