import BluetoothCore

/// Environmental Sensing Service (0x181A) characteristics gattway offers as shortcuts: each
/// fixes the UUID, the encoding and the unit the GATT Specification Supplement defines, so a
/// configuration says `temperature` instead of spelling out sint16, exponent -2, °C.
public enum EnvironmentalSensingCharacteristic: String, Sendable, Hashable, CaseIterable {
    case temperature
    case humidity
    case pressure
    case trueWindSpeed = "true_wind_speed"
    case trueWindDirection = "true_wind_direction"
    case apparentWindSpeed = "apparent_wind_speed"
    case apparentWindDirection = "apparent_wind_direction"
    case gustFactor = "gust_factor"
    case pollenConcentration = "pollen_concentration"
    case uvIndex = "uv_index"
    case irradiance
    case rainfall
    case windChill = "wind_chill"
    case heatIndex = "heat_index"
    case dewPoint = "dew_point"
    case illuminance

    public static let serviceUUID = BluetoothUUID(0x181A)

    public var uuid16: UInt16 {
        switch self {
        case .temperature: 0x2A6E
        case .humidity: 0x2A6F
        case .pressure: 0x2A6D
        case .trueWindSpeed: 0x2A70
        case .trueWindDirection: 0x2A71
        case .apparentWindSpeed: 0x2A72
        case .apparentWindDirection: 0x2A73
        case .gustFactor: 0x2A74
        case .pollenConcentration: 0x2A75
        case .uvIndex: 0x2A76
        case .irradiance: 0x2A77
        case .rainfall: 0x2A78
        case .windChill: 0x2A79
        case .heatIndex: 0x2A7A
        case .dewPoint: 0x2A7B
        case .illuminance: 0x2AFB
        }
    }

    public var uuid: BluetoothUUID { BluetoothUUID(uuid16) }

    /// Format and decimal exponent: e.g. Temperature is sint16 in 0.01 °C.
    public var encoding: ValueEncoding {
        let (format, exponent): (ValueFormat, Int8) =
            switch self {
            case .temperature: (.sint16, -2)
            case .humidity: (.uint16, -2)
            case .pressure: (.uint32, -1)
            case .trueWindSpeed, .apparentWindSpeed: (.uint16, -2)
            case .trueWindDirection, .apparentWindDirection: (.uint16, -2)
            case .gustFactor: (.uint8, -1)
            case .pollenConcentration: (.uint24, 0)
            case .uvIndex: (.uint8, 0)
            case .irradiance: (.uint16, -1)
            case .rainfall: (.uint16, -3)
            case .windChill, .heatIndex, .dewPoint: (.sint8, 0)
            case .illuminance: (.uint24, -2)
            }
        return ValueEncoding(integer: format, exponent: exponent)
    }

    public var unit: GATTUnit {
        switch self {
        case .temperature, .windChill, .heatIndex, .dewPoint: .celsius
        case .humidity: .percent
        case .pressure: .pascal
        case .trueWindSpeed, .apparentWindSpeed: .metresPerSecond
        case .trueWindDirection, .apparentWindDirection: .degree
        case .gustFactor, .uvIndex: .unitless
        case .pollenConcentration: .countPerCubicMetre
        case .irradiance: .wattsPerSquareMetre
        case .rainfall: .metre
        case .illuminance: .lux
        }
    }

    public var presentationFormat: PresentationFormat { PresentationFormat(encoding, unit: unit) }
}

/// ES Measurement descriptor sampling functions (ESS 3.1.2.2.2).
public enum SamplingFunction: UInt8, Sendable, Hashable, CaseIterable {
    case unspecified = 0x00
    case instantaneous = 0x01
    case arithmeticMean = 0x02
    case rms = 0x03
    case maximum = 0x04
    case minimum = 0x05
    case accumulated = 0x06
    case count = 0x07
}

/// ES Measurement descriptor applications (ESS 3.1.2.2.5), the ones a GPIO gateway meets.
public enum MeasurementApplication: UInt8, Sendable, Hashable, CaseIterable {
    case unspecified = 0x00
    case air = 0x01
    case water = 0x02
    case barometric = 0x03
    case soil = 0x04
    case infrared = 0x05
    case outdoor = 0x13
    case indoor = 0x14
    case inside = 0x1B
    case outside = 0x1C
    case `internal` = 0x1F
    case external = 0x20
}

/// The ES Measurement descriptor (0x290C, ESS 3.1.2.2): flags (uint16, reserved 0), sampling
/// function (uint8), measurement period (uint24 s, 0 = not in use), update interval (uint24 s,
/// 0 = not in use), application (uint8), measurement uncertainty (uint8, in 0.5 % steps,
/// 0xFF = information not available) — 11 bytes.
public struct ESMeasurement: Sendable, Hashable {
    public static let descriptorUUID = BluetoothUUID(0x290C)
    public static let uncertaintyNotAvailable: UInt8 = 0xFF
    /// Largest uint24 number of seconds.
    public static let maximumSeconds: UInt32 = 0xFF_FFFF

    public var samplingFunction: SamplingFunction
    public var measurementPeriodSeconds: UInt32
    public var updateIntervalSeconds: UInt32
    public var application: MeasurementApplication
    public var uncertainty: UInt8

    public init(
        samplingFunction: SamplingFunction = .instantaneous, measurementPeriodSeconds: UInt32 = 0,
        updateIntervalSeconds: UInt32 = 0, application: MeasurementApplication = .unspecified,
        uncertainty: UInt8 = ESMeasurement.uncertaintyNotAvailable
    ) {
        self.samplingFunction = samplingFunction
        self.measurementPeriodSeconds = min(measurementPeriodSeconds, Self.maximumSeconds)
        self.updateIntervalSeconds = min(updateIntervalSeconds, Self.maximumSeconds)
        self.application = application
        self.uncertainty = uncertainty
    }

    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 11)
        writer.write(UInt16(0))
        writer.write(samplingFunction.rawValue)
        writer.writeUInt24(measurementPeriodSeconds)
        writer.writeUInt24(updateIntervalSeconds)
        writer.write(application.rawValue)
        writer.write(uncertainty)
        return writer.bytes
    }
}
