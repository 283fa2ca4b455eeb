import ConfigReading
import GPIO

/// Quadrature encoder: one step per `transitionsPerStep` quadrature transitions; steps wrap
/// into 0..<wrap when set.
public struct RotaryEncoderSensorConfig: SensorKindConfig {
    public var a: InputLineConfig
    public var b: InputLineConfig
    public var transitionsPerStep: Int
    public var wrap: Int?

    public init(a: InputLineConfig, b: InputLineConfig, transitionsPerStep: Int, wrap: Int?) {
        self.a = a
        self.b = b
        self.transitionsPerStep = transitionsPerStep
        self.wrap = wrap
    }

    public var name: String { "rotary_encoder" }
    public var lines: [LineReference] { [a.line, b.line] }

    /// `wrap: N` is the Sensors layer's range `0...N-1`.
    public func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        let settings = RotaryEncoderSettings(
            a: line(a.line), b: line(b.line), bias: a.gpioBias, transitionsPerStep: transitionsPerStep,
            wrap: wrap.map { 0...($0 - 1) })
        return (settings, a.lineFilters)
    }

    /// Quadrature transitions per step of the usual detented encoders.
    static let defaultTransitionsPerStep = 4

    static let definition = SensorKindDescription(
        name: "rotary_encoder", settings: ["a", "b", "bias", "active_low", "debounce", "transitions_per_step", "wrap"],
        reference: [
            .init(key: "a", type: "line name", defaultValue: SensorKindDescription.Setting.required, meaning: "channel A."),
            .init(key: "b", type: "line name", defaultValue: SensorKindDescription.Setting.required, meaning: "channel B."),
            .init(
                key: "transitions_per_step", type: "1, 2 or 4", defaultValue: String(defaultTransitionsPerStep),
                meaning: "quadrature transitions per reported step (4 for detented encoders)."),
            .init(key: "wrap", type: "integer ≥ 2", defaultValue: "no wrap", meaning: "steps count modulo this.")
        ],
        value: .numeric,
        parse: { reader in
            let a = reader.input("a")
            let b = reader.input("b")
            var transitions = defaultTransitionsPerStep
            if let node = reader["transitions_per_step"], let value = node.integer() {
                if [1, 2, 4].contains(value) { transitions = value } else { node.report("must be 1, 2 or 4") }
            }
            let wrap = reader["wrap"]?.integer(in: 2...Int(Int32.max))
            guard let a, let b else { return nil }
            return RotaryEncoderSensorConfig(a: a, b: b, transitionsPerStep: transitions, wrap: wrap)
        })
}
