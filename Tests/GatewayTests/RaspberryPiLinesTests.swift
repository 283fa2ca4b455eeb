import Config
import Foundation
import GPIO
import TestHarness
import Testing

@testable import Gateway
@testable import gattway

/// The shipped configuration on the chips each kernel shows a Raspberry Pi (`gattway check`'s
/// look at this machine's lines), and `gattway lines` naming a line both ways.
struct RaspberryPiLinesTests {
    /// Chips as a kernel shows them, on a board or none; requesting lines is not its business.
    struct KernelChips: GPIOBackend {
        let shown: [ChipInfo]
        let board: RaspberryPiBoard?

        func chips() throws -> [ChipInfo] { shown }
        func now() -> UInt64 { 0 }
        func requestInput(
            _ selector: LineSelector, consumer: String, settings: InputSettings,
            onReadable: @escaping @Sendable () -> Void
        ) throws -> any InputLine { throw GPIOError.released(selector.name) }
        func requestOutput(_ selector: LineSelector, consumer: String, settings: OutputSettings) throws -> any OutputLine {
            throw GPIOError.released(selector.name)
        }
    }

    /// Debian's kernel on a Pi 3: the mainline tree's names for the header's lines.
    static let mainlinePi3 = ChipInfo(
        path: "/dev/gpiochip0", name: "gpiochip0", label: "pinctrl-bcm2835",
        lines: ([
            "ID_SDA", "ID_SCL", "SDA1", "SCL1", "GPIO_GCLK", "GPIO5", "GPIO6", "SPI_CE1_N", "SPI_CE0_N",
            "SPI_MISO", "SPI_MOSI", "SPI_SCLK", "GPIO12", "GPIO13", "TXD1", "RXD1", "GPIO16", "GPIO17",
            "GPIO18", "GPIO19", "GPIO20", "GPIO21", "GPIO22", "GPIO23", "GPIO24", "GPIO25", "GPIO26",
            "GPIO27"
        ] + Array(repeating: "", count: 26)).enumerated().map { LineInfo(offset: $0, name: $1) })
    static let pi3 = RaspberryPiBoard(model: "Raspberry Pi 3 Model B Rev 1.2", compatible: ["raspberrypi,3-model-b", "brcm,bcm2837"])
    static let pi5 = RaspberryPiBoard(model: "Raspberry Pi 5 Model B Rev 1.0", compatible: ["raspberrypi,5-model-b", "brcm,bcm2712"])

    @Test func theShippedConfigurationFindsItsLinesOnDebiansKernel() throws {
        let config = try ConfigLoader.load(file: "deploy/config/gattway.yaml").config
        #expect(SensorLineCheck.problems(config, on: KernelChips(shown: [Self.mainlinePi3], board: Self.pi3)).isEmpty)
    }

    @Test func onAPi5WithoutItsRP1ChipOneWarningNamesEveryLineAndWhatToBoot() throws {
        let config = try ConfigLoader.load(file: "deploy/config/gattway.yaml").config
        let problems = SensorLineCheck.problems(config, on: KernelChips(shown: [], board: Self.pi5))
        #expect(
            problems == [
                "GPIO lines not found for door (GPIO17), rain (GPIO27), wind (GPIO22), climate (GPIO4), "
                    + "tank (GPIO23), tank (GPIO24), pump (GPIO26): this kernel's device tree gives the "
                    + "Raspberry Pi 5 Model B Rev 1.0 no GPIO chip for its header (no pinctrl-rp1 chip; no GPIO "
                    + "chip at all). To use the header, boot the Raspberry Pi OS kernel, or a newer Debian kernel "
                    + "whose Pi 5 device tree has the RP1 (mainline Linux 6.17 or later)"
            ])
    }

    @Test func aMissingLineIsNamedWithItsSensor() throws {
        let config = try ConfigLoader.load(
            yaml: """
                gpio: {backend: libgpiod}
                sensors:
                  - {id: door, kind: binary, line: GPIO_GCLK}
                  - {id: gate, kind: binary, line: NO_SUCH_LINE}
                """
        ).config
        #expect(
            SensorLineCheck.problems(config, on: KernelChips(shown: [Self.mainlinePi3], board: Self.pi3))
                == ["sensor gate: GPIO line NO_SUCH_LINE not found (run `gattway lines` to list them)"])
    }

    /// `gattway lines --config` on a simulated chip named as Debian's kernel names a Pi 3's: the
    /// sensor on `GPIO4` is shown on the line the kernel calls `GPIO_GCLK`.
    @Test func linesOfASimulatedPi3ShowWhichSensorHoldsEachLineByItsBCMName() throws {
        let file = try temporaryDirectory("pi-lines").appendingPathComponent("gattway.yaml")
        try """
        gpio:
          backend: simulated
          chips:
            - label: pinctrl-bcm2835
              lines: [{name: ID_SDA}, {name: ID_SCL}, {name: SDA1}, {name: SCL1}, {name: GPIO_GCLK}, {name: GPIO5}]
        sensors:
          - {id: climate, kind: dht22, line: GPIO4}
          - {id: door, kind: binary, line: pin29}
        """.write(to: file, atomically: true, encoding: .utf8)
        let result = try GattwayProcess(["lines", "--config", file.path]).runToCompletion()
        #expect(result.status == 0)
        let rows = result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(rows.first == "gpiochip0 [pinctrl-bcm2835] 6 lines")
        #expect(rows.contains("2  GPIO2 (named SDA1 by this kernel)       input   header pin 3"))
        #expect(rows.contains("4  GPIO4 (named GPIO_GCLK by this kernel)  input   used by \"gattway (climate)\"  header pin 7"))
        #expect(rows.contains("5  GPIO5                                   input   used by \"gattway (door)\"  header pin 29"))
    }

    @Test func linesShowsTheBCMNameBesideTheKernelsAndTheHeaderPin() throws {
        let sim = ChipInfo(path: "/dev/gpiochip1", name: "gpiochip1", label: "gpio-sim.0-node0", lines: [LineInfo(offset: 4, name: "")])
        let listing = try BackendLineInventory(backend: KernelChips(shown: [Self.mainlinePi3, sim], board: Self.pi3)).chips()
        let rows = listing[0].rendered().split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(rows[0] == "gpiochip0 [pinctrl-bcm2835] 54 lines")
        #expect(rows[5].hasPrefix("4  GPIO4 (named GPIO_GCLK by this kernel)"))
        #expect(rows[5].hasSuffix("input   header pin 7"))
        #expect(rows[18].hasPrefix("17  GPIO17 ") && rows[18].hasSuffix("header pin 11"))
        #expect(rows[41].hasPrefix("40  GPIO40 (unnamed by this kernel)") && rows[41].hasSuffix("input"))
        #expect(listing[1].lines.map(\.name) == ["unnamed"])
    }
}
