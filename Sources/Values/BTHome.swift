import BluetoothCore

/// BTHome v2 objects gattway can advertise (https://bthome.io/format/): each an object id and
/// a little-endian integer of fixed size, signedness and scale.
public enum BTHomeObject: String, Sendable, Hashable, CaseIterable {
    case battery
    case temperature
    case humidity
    case pressure
    case illuminance
    case count8 = "count"
    case energy
    case power
    case voltage
    case opening
    case co2
    case moisture
    case door
    case moistureDetected = "moisture_binary"
    case motion
    case window
    case count16
    case count32
    case uvIndex = "uv_index"
    case speed
    case genericBoolean = "generic_boolean"
    case distance
    /// Button events (`BTHomeButtonEvent`), one byte.
    case button

    /// The object id; BTHome requires objects in ascending id order.
    public var id: UInt8 {
        switch self {
        case .battery: 0x01
        case .temperature: 0x02
        case .humidity: 0x03
        case .pressure: 0x04
        case .illuminance: 0x05
        case .count8: 0x09
        case .energy: 0x0A
        case .power: 0x0B
        case .voltage: 0x0C
        case .genericBoolean: 0x0F
        case .opening: 0x11
        case .co2: 0x12
        case .moisture: 0x14
        case .door: 0x1A
        case .moistureDetected: 0x20
        case .motion: 0x21
        case .window: 0x2D
        case .button: 0x3A
        case .count16: 0x3D
        case .count32: 0x3E
        case .distance: 0x40
        case .speed: 0x44
        case .uvIndex: 0x46
        }
    }

    /// Binary sensors carry one byte, 0 or 1, and take a boolean.
    public var isBinary: Bool {
        switch self {
        case .genericBoolean, .opening, .door, .moistureDetected, .motion, .window: true
        default: false
        }
    }

    /// Size, signedness and decimal exponent of the numeric objects (binary: uint8, 0).
    var layout: (format: ValueFormat, exponent: Int8) {
        switch self {
        case .battery, .count8, .button: (.uint8, 0)
        case .temperature: (.sint16, -2)
        case .humidity, .moisture, .speed: (.uint16, -2)
        case .pressure, .illuminance, .power: (.uint24, -2)
        case .energy: (.uint24, -3)
        case .voltage: (.uint16, -3)
        case .co2, .count16: (.uint16, 0)
        case .count32: (.uint32, 0)
        case .uvIndex: (.uint8, -1)
        // Distance in millimetres; values are given in metres, as gattway's sensors report them.
        case .distance: (.uint16, -3)
        case .genericBoolean, .opening, .door, .moistureDetected, .motion, .window: (.uint8, 0)
        }
    }

    /// The unit BTHome reports the object in.
    public var unitSymbol: String {
        switch self {
        case .battery, .humidity, .moisture: "%"
        case .temperature: "°C"
        case .pressure: "hPa"
        case .illuminance: "lx"
        case .energy: "kWh"
        case .power: "W"
        case .voltage: "V"
        case .co2: "ppm"
        case .speed: "m/s"
        case .distance: "m"
        default: ""
        }
    }
}

/// The events of BTHome's button object (0x3A), as https://bthome.io/format/ lists them and
/// bthome-ble (Home Assistant's parser) names them.
public enum BTHomeButtonEvent: UInt8, Sendable, Hashable, CaseIterable {
    /// No event: what a button sends after its event, so receivers do not take it again.
    case none = 0x00
    case press = 0x01
    case doublePress = 0x02
    case triplePress = 0x03
    case longPress = 0x04
    case longDoublePress = 0x05
    case longTriplePress = 0x06
    case holdPress = 0x80
    case holdRelease = 0x81
}

/// One value to advertise.
public struct BTHomeMeasurement: Sendable, Hashable {
    public let object: BTHomeObject
    public let value: SensorValue

    public init(_ object: BTHomeObject, _ value: SensorValue) {
        self.object = object
        self.value = value
    }

    /// A button event (object 0x3A).
    public init(button event: BTHomeButtonEvent) {
        self.init(.button, .number(Double(event.rawValue)))
    }

    /// Object id then the value's bytes.
    public func bytes() throws(ValueError) -> [UInt8] {
        let payload: [UInt8]
        if object.isBinary {
            guard case .bool(let flag) = value else { throw .wrongType(expected: .bool, got: value.kindName) }
            payload = [flag ? 1 : 0]
        } else if object == .button {
            guard case .number(let number) = value, let raw = UInt8(exactly: number),
                let event = BTHomeButtonEvent(rawValue: raw)
            else { throw .notAButtonEvent(value) }
            payload = [event.rawValue]
        } else {
            let layout = object.layout
            payload = try ValueEncoding(integer: layout.format, exponent: layout.exponent).encode(value)
        }
        return [object.id] + payload
    }
}

/// A BTHome bind key: the 16-byte AES key that encrypts the advertisements, which Home Assistant
/// asks for when it finds the device. Its description never shows the key.
public struct BTHomeKey: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Exactly 32 hex digits (either case), the form Home Assistant takes.
    public init?(hex: some StringProtocol) {
        guard hex.count == 32, let bytes = [UInt8](hexString: String(hex)), bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public var description: String { "BTHome bind key" }
}

/// What encrypts one packet (https://bthome.io/encryption/): the key, the advertiser's address
/// (part of the nonce: receivers take it from the advertisement) and the packet's counter, which
/// must grow from packet to packet for receivers that check it (Home Assistant does).
public struct BTHomeEncryption: Sendable {
    public let key: BTHomeKey
    public let address: BluetoothAddress
    public let counter: UInt32

    public init(key: BTHomeKey, address: BluetoothAddress, counter: UInt32) {
        self.key = key
        self.address = address
        self.counter = counter
    }
}

/// BTHome v2 service data (https://bthome.io/format/): service UUID 0xFCD2, a device
/// information byte, then the objects sorted by object id, the packet id (0x00) first.
public enum BTHome {
    public static let serviceUUID = BluetoothUUID(0xFCD2)
    /// Device information: bits 5-7 version (2), bit 2 trigger-based, bit 0 encrypted.
    static let version2: UInt8 = 0x40
    static let triggerBasedFlag: UInt8 = 0x04
    static let encryptedFlag: UInt8 = 0x01
    /// The packet id object: receivers drop a packet whose id they have just seen.
    static let packetIDObject: UInt8 = 0x00

    /// The service data after the UUID: device information byte, then the packet id and the
    /// measurements sorted by object id; encrypted when `encryption` is given, the objects then
    /// followed by the counter and the MIC.
    public static func serviceData(
        _ measurements: [BTHomeMeasurement], packetID: UInt8,
        triggerBased: Bool = false, encryption: BTHomeEncryption? = nil
    ) throws(ValueError) -> [UInt8] {
        // A stable sort keeps measurements of one object id in the order given.
        let sorted = measurements.enumerated()
            .sorted { ($0.element.object.id, $0.offset) < ($1.element.object.id, $1.offset) }
            .map(\.element)
        var objects: [UInt8] = [packetIDObject, packetID]
        for measurement in sorted {
            objects += try measurement.bytes()
        }
        var deviceInformation = version2 | (triggerBased ? triggerBasedFlag : 0)
        guard let encryption else { return [deviceInformation] + objects }
        deviceInformation |= encryptedFlag
        let counter = (0..<4).map { UInt8(truncatingIfNeeded: encryption.counter >> (8 * $0)) }
        // Nonce: the address as written (most significant byte first), the UUID as on air,
        // the device information and the counter (little-endian).
        let nonce = encryption.address.bytes.reversed() + serviceUUID.attBytes + [deviceInformation] + counter
        do {
            let (ciphertext, mic) = try AESCCM.encrypt(objects, key: encryption.key.bytes, nonce: nonce, micLength: 4)
            return [deviceInformation] + ciphertext + counter + mic
        } catch {
            // A BTHomeKey has 16 bytes, the nonce 13 and an advertisement far fewer than 65536:
            // CCM has nothing to refuse.
            preconditionFailure("AES-CCM refused a BTHome packet: \(error)")
        }
    }
}
