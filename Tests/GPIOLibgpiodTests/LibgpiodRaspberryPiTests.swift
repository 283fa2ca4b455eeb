import Foundation
import GPIO
import TestHarness
import Testing

@testable import GPIOLibgpiod

/// The board the libgpiod backend reads from a device tree directory, and what it says on a Pi
/// whose kernel shows no chip for the header: needs no kernel, only files.
@Suite struct LibgpiodBoardTests {
    /// A device tree root with `model` and `compatible` as the kernel shows them, and an empty
    /// device directory: Debian trixie's kernel on a Pi 5 has no chip for the header.
    func backend(model: String?, compatible: [String]) throws -> LibgpiodBackend {
        let root = try temporaryDirectory("device-tree")
        let devices = try temporaryDirectory("dev")
        if let model {
            try Data(model.utf8 + [0]).write(to: root.appendingPathComponent("model"))
            try Data(compatible.flatMap { Array($0.utf8) + [0] }).write(to: root.appendingPathComponent("compatible"))
        }
        return LibgpiodBackend(deviceDirectory: devices.path, deviceTreeDirectory: root.path)
    }

    @Test func aPi5WithoutItsRP1ChipIsToldWhatToBoot() throws {
        let backend = try backend(
            model: "Raspberry Pi 5 Model B Rev 1.0", compatible: ["raspberrypi,5-model-b", "brcm,bcm2712"])
        let board = try #require(backend.board)
        #expect(board.model == "Raspberry Pi 5 Model B Rev 1.0")
        #expect(board.headerChipLabel == "pinctrl-rp1")
        let error = #expect(throws: GPIOError.self) { try backend.resolve(LineSelector("GPIO4")) }
        #expect(error == .headerChipMissing(LineSelector("GPIO4"), board: board, chips: []))
        #expect(error?.description.contains("no pinctrl-rp1 chip; no GPIO chip at all") == true)
        #expect(error?.description.contains("boot the Raspberry Pi OS kernel") == true)
    }

    @Test func elsewhereAMissingLineIsAMissingLine() throws {
        for backend in [
            try backend(model: nil, compatible: []),
            try backend(model: "QEMU KVM Virtual Machine", compatible: ["linux,dummy-virt"])
        ] {
            #expect(backend.board == nil)
            #expect(throws: GPIOError.lineNotFound(LineSelector("GPIO4"), closest: [])) {
                try backend.resolve(LineSelector("GPIO4"))
            }
        }
    }
}

/// The gpio-sim chips the VM harness makes in the image of a Raspberry Pi's pin controller as
/// each kernel shows it (`GATTWAY_GPIOSIM_PI_CHIPS`, `kernel=/dev/gpiochipN:sysfs-dir` each):
/// `raspberry-pi-os` labelled `pinctrl-bcm2835`, lines `GPIO0`…`GPIO53`; `mainline` labelled
/// `pinctrl-bcm2711`, 58 lines, the header's named as the mainline tree names them (`SDA1`,
/// `GPIO_GCLK`, `SPI_CE0_N`, …) and the rest unnamed; `unnamed` labelled `pinctrl-rp1`, 54
/// unnamed lines. gpio-sim sets a chip's label from its bank's `label` attribute, so these are
/// the kernel's own chips with the SoC's labels, seen through libgpiod.
enum PiSimChips {
    static let chips: [String: (device: String, sysfs: String)] = {
        let spec = ProcessInfo.processInfo.environment["GATTWAY_GPIOSIM_PI_CHIPS"] ?? ""
        var chips: [String: (device: String, sysfs: String)] = [:]
        for entry in spec.split(separator: " ") {
            let parts = entry.split(separator: "=", maxSplits: 1)
            let paths = parts.last?.split(separator: ":") ?? []
            guard parts.count == 2, paths.count == 2 else { continue }
            chips[String(parts[0])] = (String(paths[0]), String(paths[1]))
        }
        return chips
    }()
    static var available: Bool { ["raspberry-pi-os", "mainline", "unnamed"].allSatisfy { chips[$0] != nil } }
}

@Suite(
    .enabled(if: PiSimChips.available, "needs the VM harness's Pi-like gpio-sim chips (GATTWAY_GPIOSIM_PI_CHIPS)"),
    .serialized)
struct LibgpiodRaspberryPiNameTests {
    /// A backend that sees only the chips of `kernels`, in that order, as `/dev` would show them
    /// on a Pi booted with that kernel.
    func backend(_ kernels: String...) throws -> LibgpiodBackend {
        let devices = try temporaryDirectory("pi-dev")
        for (number, kernel) in kernels.enumerated() {
            try FileManager.default.createSymbolicLink(
                atPath: devices.appendingPathComponent("gpiochip\(number)").path,
                withDestinationPath: try #require(PiSimChips.chips[kernel]).device)
        }
        return LibgpiodBackend(deviceDirectory: devices.path)
    }

    func drive(_ kernel: String, _ offset: Int, high: Bool) throws {
        try (high ? "pull-up" : "pull-down").write(
            toFile: "\(PiSimChips.chips[kernel]!.sysfs)/sim_gpio\(offset)/pull", atomically: false, encoding: .utf8)
    }

    func level(_ kernel: String, _ offset: Int) throws -> Bool {
        try String(contentsOfFile: "\(PiSimChips.chips[kernel]!.sysfs)/sim_gpio\(offset)/value", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1"
    }

    @Test(arguments: [
        ("raspberry-pi-os", "pinctrl-bcm2835", "GPIO4"), ("mainline", "pinctrl-bcm2711", "GPIO_GCLK"),
        ("unnamed", "pinctrl-rp1", "")
    ])
    func gpio4AndPin7AreBCMLine4WhateverTheKernelCallsIt(kernel: String, label: String, kernelName: String) throws {
        let backend = try backend(kernel)
        let chip = try #require(try backend.chips().first)
        #expect(chip.label == label)
        #expect(chip.lines[4].name == kernelName)
        for name in ["GPIO4", "pin7"] {
            let input = try backend.requestInput(
                LineSelector(name), consumer: "gattway-test", settings: InputSettings(), onReadable: {})
            #expect(input.line.offset == 4)
            try drive(kernel, 4, high: true)
            #expect(try input.value())
            try drive(kernel, 4, high: false)
            #expect(try !input.value())
            input.release()
        }
        let output = try backend.requestOutput(
            LineSelector("GPIO2"), consumer: "gattway-test", settings: OutputSettings(initialValue: true))
        #expect(output.line.offset == 2)
        #expect(try level(kernel, 2))
        output.release()
    }

    @Test func aLineReallyNamedGPIO4WinsOverTheAliasOnAnEarlierChip() throws {
        let backend = try backend("mainline", "raspberry-pi-os")
        let line = try backend.resolve(LineSelector("GPIO4"))
        #expect(line.chip.label == "pinctrl-bcm2835" && line.offset == 4)
        #expect(try backend.resolve(LineSelector("GPIO_GCLK")).chip.label == "pinctrl-bcm2711")
        #expect(try backend.resolve(LineSelector("GPIO4", chip: "pinctrl-bcm2711")).offset == 4)
    }

    @Test func theRP1AnswersToBankZeroOnly() throws {
        let backend = try backend("unnamed")
        #expect(try backend.resolve(LineSelector("GPIO27")).offset == 27)
        #expect(throws: GPIOError.lineNotFound(LineSelector("GPIO28"), closest: [])) {
            try backend.resolve(LineSelector("GPIO28"))
        }
    }
}
