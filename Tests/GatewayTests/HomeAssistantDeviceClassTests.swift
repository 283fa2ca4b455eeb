import Config
import Testing
import Values

@testable import Gateway

/// Every unit a characteristic can carry against Home Assistant's own lists: the device class
/// gattway gives a sensor must be one Home Assistant takes with that unit and that state class,
/// and every unit Home Assistant has a device class for gets one (issue 30: a wind sensor in m/s
/// had none).
@Suite struct HomeAssistantDeviceClassTests {
    /// Home Assistant's `DEVICE_CLASS_UNITS` (homeassistant/components/sensor/const.py, with the
    /// unit enums of homeassistant/const.py), the classes whose units overlap gattway's.
    static let unitsOfClass: [String: Set<String>] = [
        "atmospheric_pressure": ["Pa", "hPa", "kPa", "bar", "cbar", "mbar", "mmHg", "inHg", "psi"],
        "battery": ["%"],
        "carbon_dioxide": ["ppm"],
        "carbon_monoxide": ["ppm"],
        "current": ["A", "mA"],
        "distance": ["km", "m", "cm", "mm", "mi", "nmi", "yd", "ft", "in"],
        "duration": ["d", "h", "min", "s", "ms"],
        "energy": ["J", "kJ", "MJ", "GJ", "mWh", "Wh", "kWh", "MWh", "GWh", "TWh", "cal", "kcal", "Mcal", "Gcal"],
        "energy_storage": ["J", "kJ", "MJ", "GJ", "mWh", "Wh", "kWh", "MWh", "GWh", "TWh", "cal", "kcal", "Mcal", "Gcal"],
        "frequency": ["Hz", "kHz", "MHz", "GHz"],
        "humidity": ["%"],
        "illuminance": ["lx"],
        "irradiance": ["W/m²", "BTU/(h⋅ft²)"],
        "moisture": ["%"],
        "power": ["W", "kW", "MW", "GW", "TW"],
        "power_factor": ["%"],
        "pressure": ["Pa", "hPa", "kPa", "bar", "cbar", "mbar", "mmHg", "inHg", "psi"],
        "signal_strength": ["dB", "dBm"],
        "sound_pressure": ["dB", "dBA"],
        "speed": ["Beaufort", "ft/s", "in/s", "km/h", "kn", "m/s", "mph", "mm/s", "in/d", "in/h", "mm/d", "mm/h"],
        "temperature": ["°C", "°F", "K"],
        "volatile_organic_compounds_parts": ["ppb", "ppm"],
        "voltage": ["V", "mV", "µV", "kV", "MV"],
        "volume": ["L", "mL", "m³", "ft³", "CCF", "gal", "fl. oz."],
        "volume_flow_rate": ["m³/h", "m³/s", "ft³/min", "L/h", "L/min", "L/s", "gal/min", "mL/s"],
        "volume_storage": ["L", "mL", "m³", "ft³", "CCF", "gal", "fl. oz."],
        "water": ["CCF", "ft³", "m³", "gal", "L"],
        "weight": ["g", "kg", "mg", "µg", "oz", "lb", "st"],
        "wind_direction": ["°"],
        "wind_speed": ["Beaufort", "ft/s", "km/h", "kn", "m/s", "mph"]
    ]

    /// Home Assistant's `DEVICE_CLASS_STATE_CLASSES` for the same classes: which take a total.
    static let takesTotal: Set<String> = ["distance", "duration", "energy", "volume", "water", "weight"]
    /// Classes that take no state class at all (gattway always sends one).
    static let takesNoStateClass: Set<String> = ["wind_direction"]

    /// The words a sensor id or characteristic name may carry, to try every choice a unit has.
    static let nameSets: [[String]] = [
        [], ["wind"], ["water_meter"], ["battery"], ["soil_moisture"], ["humidity"], ["co2"], ["co"], ["voc"],
        ["rssi"], ["barometer"]
    ]

    @Test(arguments: GATTUnit.allCases)
    func theDeviceClassIsOneHomeAssistantTakesWithTheUnit(unit: GATTUnit) {
        var given: Set<String> = []
        for names in Self.nameSets {
            for isTotal in [false, true] {
                guard
                    let deviceClass = MirrorMapping.measuredDeviceClass(
                        reading: .value, unit: unit, names: names, isTotal: isTotal)
                else { continue }
                given.insert(deviceClass)
                #expect(
                    Self.unitsOfClass[deviceClass]?.contains(unit.symbol) == true,
                    "\(deviceClass) does not take \(unit.symbol) (names \(names))")
                #expect(!isTotal || Self.takesTotal.contains(deviceClass), "\(deviceClass) takes no total")
            }
        }
        let classesOfUnit = Self.unitsOfClass.filter { $0.value.contains(unit.symbol) }.map(\.key)
            .filter { !Self.takesNoStateClass.contains($0) }
        if !classesOfUnit.isEmpty {
            #expect(!given.isEmpty, "\(unit.symbol): Home Assistant has \(classesOfUnit.sorted()), gattway gives none")
        }
    }

    @Test(arguments: [
        (GATTUnit.metresPerSecond, ["anemometer"], "wind_speed" as String?), (.metresPerSecond, ["belt"], "speed"),
        (.kilometresPerHour, ["wind", "gust"], "wind_speed"), (.litresPerSecond, ["flow"], "volume_flow_rate"),
        (.wattsPerSquareMetre, ["sun"], "irradiance"), (.partsPerMillion, ["co2"], "carbon_dioxide"),
        (.percent, ["battery"], "battery"), (.percent, ["level"], nil), (.degree, ["wind_direction"], nil)
    ])
    func namesChooseAmongTheClassesOfAUnit(unit: GATTUnit, names: [String], deviceClass: String?) {
        #expect(MirrorMapping.measuredDeviceClass(reading: .value, unit: unit, names: names) == deviceClass)
    }

    @Test func aCounterGetsOnlyAClassThatTakesATotal() {
        #expect(MirrorMapping.measuredDeviceClass(reading: .value, unit: .litre, names: ["water"], isTotal: true) == "water")
        #expect(MirrorMapping.measuredDeviceClass(reading: .value, unit: .litre, names: ["tank"]) == "volume_storage")
        #expect(MirrorMapping.measuredDeviceClass(reading: .value, unit: .kilowattHour, isTotal: true) == "energy")
        #expect(MirrorMapping.measuredDeviceClass(reading: .value, unit: .celsius, isTotal: true) == nil)
    }
}
