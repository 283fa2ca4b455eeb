import Config
import Foundation
import Testing

/// `ConfigChanges.between`: what a reload finds changed, from two configurations as YAML.
struct ConfigChangesTests {
    static let base = """
        gpio:
          backend: simulated
          chips:
            - lines:
                - {name: GPIO17, generator: {type: constant, level: 1}}
                - {name: GPIO27, generator: {type: constant, level: 0}}
                - {name: GPIO22, generator: {type: constant, level: 0}}
        sensors:
          - {id: door, kind: binary, line: GPIO17}
          - {id: window, kind: binary, line: GPIO27}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0016
            characteristics:
              - {uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0016, format: bool, source: {sensor: door}}
              - {uuid: 6E400003-B5A3-F393-E0A9-E50E24DC0016, format: bool, source: {sensor: window}}
        """

    struct Case: CustomTestStringConvertible, Sendable {
        let label: String
        /// Each (text in `base`, its replacement); an empty text appends the replacement.
        let edits: [(String, String)]
        let expected: ConfigChanges
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(label: "unchanged", edits: [("", "")], expected: ConfigChanges()),
        Case(
            label: "a sensor's line inverted",
            edits: [("{id: door, kind: binary, line: GPIO17}", "{id: door, kind: binary, line: GPIO17, active_low: true}")],
            expected: ConfigChanges(sensorsChanged: ["door"])),
        Case(
            label: "a sensor added",
            edits: [
                (
                    "  - {id: window, kind: binary, line: GPIO27}",
                    "  - {id: window, kind: binary, line: GPIO27}\n  - {id: spare, kind: binary, line: GPIO22}"
                )
            ],
            expected: ConfigChanges(sensorsAdded: ["spare"])),
        Case(
            label: "a sensor and its characteristic removed",
            edits: [
                ("  - {id: window, kind: binary, line: GPIO27}\n", ""),
                ("\n      - {uuid: 6E400003-B5A3-F393-E0A9-E50E24DC0016, format: bool, source: {sensor: window}}", "")
            ],
            expected: ConfigChanges(sensorsRemoved: ["window"], sections: ["services"])),
        Case(
            label: "a notify policy",
            edits: [("format: bool, source: {sensor: door}", "format: bool, source: {sensor: door}, notify: {min_interval: 2s}")],
            expected: ConfigChanges(notifyPolicies: ["6E400001-B5A3-F393-E0A9-E50E24DC0016/6E400002-B5A3-F393-E0A9-E50E24DC0016"])),
        Case(
            label: "a notify policy and a characteristic's name",
            edits: [
                ("format: bool, source: {sensor: door}", "name: door, format: bool, source: {sensor: door}, notify: {min_interval: 2s}")
            ],
            expected: ConfigChanges(sections: ["services"])),
        Case(
            label: "a characteristic's UUID", edits: [("6E400003-B5A3", "6E400005-B5A3")],
            expected: ConfigChanges(sections: ["services"])),
        Case(
            label: "a sensor broadcast over BTHome",
            edits: [("{id: door, kind: binary, line: GPIO17}", "{id: door, kind: binary, line: GPIO17, bthome: true}")],
            expected: ConfigChanges(sections: ["sensors[].bthome"])),
        Case(
            label: "mqtt added", edits: [("", "\nmqtt: {url: \"mqtt://127.0.0.1:1883\"}")],
            expected: ConfigChanges(sections: ["mqtt"])),
        Case(
            label: "device, state_dir and runtime_dir",
            edits: [("", "\ndevice: {id: other, name: gattway}\nstate_dir: /tmp/s\nruntime_dir: /tmp/r")],
            expected: ConfigChanges(sections: ["device", "state_dir", "runtime_dir"])),
        Case(
            label: "the transport", edits: [("", "\nbluetooth: {transport: hci1}")],
            expected: ConfigChanges(sections: ["bluetooth"])),
        Case(
            label: "a simulated line",
            edits: [("{name: GPIO22, generator: {type: constant, level: 0}}", "{name: GPIO22, generator: {type: constant, level: 1}}")],
            expected: ConfigChanges(sections: ["gpio"]))
    ]

    @Test(arguments: cases)
    func changes(_ example: Case) throws {
        let old = try ConfigLoader.load(yaml: Self.base).config
        var text = Self.base
        for (original, replacement) in example.edits {
            if original.isEmpty {
                text += replacement
            } else {
                #expect(text.contains(original), "the case edits the base")
                text = text.replacingOccurrences(of: original, with: replacement)
            }
        }
        let new = try ConfigLoader.load(yaml: text).config
        #expect(ConfigChanges.between(old, new) == example.expected)
        #expect(ConfigChanges.between(old, new).isEmpty == (example.expected == ConfigChanges()))
    }

    /// Presses added to a broadcast sensor add a button object to the broadcast, which is fixed
    /// until a restart; the sensor itself restarts.
    @Test func pressesOfABroadcastSensorChangeTheBroadcast() throws {
        let broadcast = Self.base.replacingOccurrences(
            of: "{id: door, kind: binary, line: GPIO17}", with: "{id: door, kind: binary, line: GPIO17, bthome: true}")
        let old = try ConfigLoader.load(yaml: broadcast).config
        let new = try ConfigLoader.load(
            yaml: broadcast.replacingOccurrences(of: "bthome: true}", with: "bthome: true, press: {}}")
        ).config
        #expect(ConfigChanges.between(old, new) == ConfigChanges(sensorsChanged: ["door"], sections: ["sensors[].bthome"]))
    }

    @Test func aSensorRemovedAndAddedBackAreBothSeenInReverse() throws {
        let old = try ConfigLoader.load(yaml: Self.base).config
        var new = old
        new.sensors.removeLast()
        #expect(ConfigChanges.between(old, new).sensorsRemoved == ["window"])
        #expect(ConfigChanges.between(new, old).sensorsAdded == ["window"])
    }
}
