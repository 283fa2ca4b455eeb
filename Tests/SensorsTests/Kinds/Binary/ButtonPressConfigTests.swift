import Config
import Foundation
import MQTTMirror
import Sensors
import Testing

/// `press:` of a binary sensor and the characteristics carrying its `press` reading: what is
/// read, the defaults an event gets, and each mistake reported with path, line and message.
struct ButtonPressConfigTests {
    static func yaml(press: String = "press: {}", sensorExtra: String = "", characteristic: String) -> String {
        """
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: BTN
        sensors:
          - id: button
            kind: binary
            line: BTN
            \(press)
            \(sensorExtra)
        services:
          - uuid: 181A
            characteristics:
              - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
        \(characteristic)
        mqtt:
          url: mqtt://localhost
        """
    }

    static let pressCharacteristic = """
                format: uint8
                source: {sensor: button, reading: press}
        """

    private func errors(_ yaml: String) -> [String] {
        do {
            _ = try ConfigLoader.load(yaml: yaml)
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }

    @Test func pressSettingsAndTheirDefaultsAreRead() throws {
        let defaults = try ConfigLoader.load(yaml: Self.yaml(characteristic: Self.pressCharacteristic)).config
        guard let button = defaults.sensors[0].kind as? BinarySensorConfig else {
            Issue.record("not a binary sensor")
            return
        }
        #expect(button.press == PressSettings(doublePressWindow: .milliseconds(300), longPressTime: .milliseconds(800)))
        #expect(defaults.sensors[0].kind.readings == [.value, .press])

        let set = try ConfigLoader.load(
            yaml: Self.yaml(
                press: "press: {double_press_window: 0s, long_press_time: 2s}",
                characteristic: Self.pressCharacteristic)
        ).config
        guard let explicit = set.sensors[0].kind as? BinarySensorConfig else { return }
        #expect(explicit.press == PressSettings(doublePressWindow: .zero, longPressTime: .seconds(2)))
    }

    /// Each press is sent once: no skipping a press equal to the last one, no old press sent to a
    /// central that subscribes; Home Assistant gets an event entity.
    @Test func aPressCharacteristicNotifiesEveryPressAndIsAnEvent() throws {
        let config = try ConfigLoader.load(yaml: Self.yaml(characteristic: Self.pressCharacteristic)).config
        let characteristic = config.services[0].characteristics[0]
        #expect(characteristic.notify.onChange == false)
        #expect(characteristic.notify.currentValueOnSubscribe == false)
        #expect(characteristic.properties == [.read, .notify])
        #expect(HomeAssistantDomain.of(characteristic, sensor: config.sensors[0]) == .event)
        let level = try ConfigLoader.load(
            yaml: Self.yaml(characteristic: "        format: bool\n        source: {sensor: button}")
        ).config
        #expect(level.services[0].characteristics[0].notify.onChange == true)
        #expect(HomeAssistantDomain.of(level.services[0].characteristics[0], sensor: level.sensors[0]) == .binarySensor)
    }

    @Test func aPressEventTakesAnEventDeviceClass() throws {
        let config = try ConfigLoader.load(
            yaml: Self.yaml(characteristic: Self.pressCharacteristic + "\n        homeassistant: {device_class: doorbell}")
        ).config
        #expect(config.services[0].characteristics[0].homeAssistant?.deviceClass == "doorbell")
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let yaml: String
        let expected: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "misspelt press setting",
            yaml: yaml(press: "press: {double_window: 200ms}", characteristic: pressCharacteristic),
            expected: [#"sensors[0].press.double_window (line 10): unknown key (expected one of: double_press_window, long_press_time)"#]),
        Case(
            name: "double press window out of range",
            yaml: yaml(press: "press: {double_press_window: 3s}", characteristic: pressCharacteristic),
            expected: [#"sensors[0].press.double_press_window (line 10): 3s is out of range (0s-2s)"#]),
        Case(
            name: "long press time out of range",
            yaml: yaml(press: "press: {long_press_time: 50ms}", characteristic: pressCharacteristic),
            expected: [#"sensors[0].press.long_press_time (line 10): 50ms is out of range (100ms-10s)"#]),
        Case(
            name: "long press time not longer than the debounce",
            yaml: yaml(
                press: "press: {long_press_time: 200ms}", sensorExtra: "debounce: 200ms",
                characteristic: pressCharacteristic),
            expected: [
                #"sensors[0].press.long_press_time (line 10): long_press_time (200ms) must be longer than debounce (200ms): every press would be a long one"#
            ]),
        Case(
            name: "press on a sensor that is not binary",
            yaml: yaml(press: "press: {}", characteristic: pressCharacteristic).replacingOccurrences(
                of: "kind: binary", with: "kind: counter"),
            expected: [
                #"sensors[0].press (line 10): not a setting of "counter" (its settings: line, bias, active_low, debounce, report_interval)"#,
                #"services[0].characteristics[0].source.reading (line 17): sensor "button" (counter) has no press reading (it has value)"#
            ]),
        Case(
            name: "press reading of a binary sensor without press",
            yaml: yaml(press: "", characteristic: pressCharacteristic),
            expected: [
                #"services[0].characteristics[0].source.reading (line 17): sensor "button" (binary) has no press reading (it has value)"#
            ]),
        Case(
            name: "press reading in a float format",
            yaml: yaml(characteristic: "        format: float32\n        source: {sensor: button, reading: press}"),
            expected: [
                #"services[0].characteristics[0].format (line 16): a press reading is an event code (1 single, 2 double, 4 long): give an integer format without exponent, such as uint8"#
            ]),
        Case(
            name: "press reading with a heartbeat",
            yaml: yaml(characteristic: pressCharacteristic + "\n        notify: {max_interval: 10s}"),
            expected: [
                #"services[0].characteristics[0].notify.max_interval (line 18): a press reading is an event, sent once per event; it takes no max_interval"#
            ]),
        Case(
            name: "press event with a binary sensor's device class",
            yaml: yaml(characteristic: pressCharacteristic + "\n        homeassistant: {device_class: door}"),
            expected: [
                #"services[0].characteristics[0].homeassistant.device_class (line 18): "door" is not an event device class (see Home Assistant's event device classes)"#
            ]),
        Case(
            name: "press event with a unit",
            yaml: yaml(characteristic: pressCharacteristic + "\n        homeassistant: {unit: presses}"),
            expected: [
                #"services[0].characteristics[0].homeassistant.unit (line 18): an event entity shows no unit (its state is the time of the last event)"#
            ])
    ]

    @Test(arguments: cases)
    func reportsExactPathLineAndMessage(_ testCase: Case) {
        #expect(errors(testCase.yaml) == testCase.expected)
    }
}
