import BluetoothGATT
import BluetoothSMP
import Config
import Testing

@testable import Gateway

/// The configuration's security settings as the BLE side takes them: `permissions` per
/// characteristic → GATT permissions, `bluetooth.security` → the Security Manager's configuration.
struct SecurityMappingTests {
    static let cases: [(String, GATTPermissions, GATTPermissions)] = [
        ("open", .readable, .writeable),
        ("[encrypted]", .readEncryptionRequired, .writeEncryptionRequired),
        (
            "[authenticated]", [.readEncryptionRequired, .readAuthenticationRequired],
            [.writeEncryptionRequired, .writeAuthenticationRequired]
        ),
        ("[bonded]", [.readEncryptionRequired, .readBondingRequired], [.writeEncryptionRequired, .writeBondingRequired]),
        (
            "[authenticated, bonded]",
            [.readEncryptionRequired, .readAuthenticationRequired, .readBondingRequired],
            [.writeEncryptionRequired, .writeAuthenticationRequired, .writeBondingRequired]
        )
    ]

    /// The GATT permissions of the first service's first characteristic.
    static func firstCharacteristicPermissions(_ yaml: String) throws -> GATTPermissions {
        let config = try ConfigLoader.load(yaml: yaml).config
        return try GATTLayout(config: config).service(0, included: { _ in nil }).characteristics[0].permissions
    }

    @Test(arguments: cases)
    func permissionsBecomeGATTPermissions(requirement: String, read: GATTPermissions, write: GATTPermissions) throws {
        let yaml = """
            services:
              - uuid: 181A
                characteristics:
                  - uuid: 2A6E
                    format: uint8
                    properties: [read, write]
                    source: {written: 0}
                    permissions: {read: \(requirement), write: \(requirement)}
            """
        #expect(try Self.firstCharacteristicPermissions(yaml) == read.union(write))
    }

    @Test func writableCharacteristicsNeedAnEncryptedBondedLinkByDefault() throws {
        let yaml = """
            services:
              - uuid: 181A
                characteristics:
                  - uuid: 2A6E
                    format: uint8
                    properties: [read, write]
                    source: {written: 0}
            """
        #expect(try Self.firstCharacteristicPermissions(yaml) == [.readable, .writeEncryptionRequired, .writeBondingRequired])
    }

    @Test func securitySettingsReachTheSecurityManager() throws {
        let yaml = """
            bluetooth:
              security: {io_capabilities: display_only, passkey: 123456, allow_legacy: true}
            services:
              - uuid: 181A
                characteristics:
                  - {uuid: 2A6E, format: uint8, source: {static: 1}}
            """
        let config = try ConfigLoader.load(yaml: yaml).config
        let security = try HostMapping.configuration(config).security
        #expect(security.ioCapability == .displayOnly)
        #expect(security.fixedPasskey == 123_456)
        #expect(security.allowLegacy)
        let defaults = try HostMapping.configuration(
            try ConfigLoader.load(
                yaml: """
                    services:
                      - uuid: 181A
                        characteristics:
                          - {uuid: 2A6E, format: uint8, source: {static: 1}}
                    """
            ).config
        ).security
        #expect(defaults.ioCapability == .noInputNoOutput)
        #expect(defaults.fixedPasskey == nil)
        #expect(!defaults.allowLegacy)
    }
}
