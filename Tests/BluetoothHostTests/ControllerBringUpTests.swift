import BluetoothCore
import BluetoothHCI
import Foundation
import StateFile
import TestHarness
import Testing

@testable import BluetoothHost

/// `ControllerBringUp` against a controller answering from a table: the commands it sends, in
/// order, with their parameters, and what it learns from the answers.
@Suite(.timeLimit(.minutes(1))) struct ControllerBringUpTests {
    static let publicAddress = BluetoothAddress("F0:00:00:00:00:01")!
    /// Bluetooth 5.3 (HCI and LMP version 12), manufacturer 2, revisions 0x1234 and 0x5678.
    static let version: [UInt8] = [0x0C, 0x34, 0x12, 0x0C, 0x02, 0x00, 0x78, 0x56]
    /// Events the host handles: bits 4, 7, 11, 15, 25, 47 and 61 (Vol 4 Part E 7.3.1).
    static let setEventMask = HCICommand(opcode: .setEventMask, parameters: [0x90, 0x88, 0x00, 0x02, 0x00, 0x80, 0x00, 0x20])
    /// LE subevents: bits 0–4, 6, 9, 11 and 17 (Vol 4 Part E 7.8.1).
    static let leSetEventMask = HCICommand(opcode: .leSetEventMask, parameters: [0x5F, 0x0A, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00])
    static let inquiries: [HCICommand] = [
        .reset, .readLocalVersion, .readLocalSupportedCommands, .leReadLocalSupportedFeatures, .readBDADDR,
        HCICommand(opcode: .leReadBufferSize)
    ]

    /// A controller's answers: LE Set Data Length and LE Set PHY among its commands (octets 33 and
    /// 35, bit 6), LE Set Extended Advertising Parameters (octet 36, bit 2) when `extended`; the
    /// matching LE features (bits 5 and 8, 12 when `extended`); `leBuffers` as LE Read Buffer Size
    /// gives them (nil: none of its own) and `sharedBuffers` as Read Buffer Size does; an
    /// advertising TX power of -4 dBm.
    static func replies(
        address: BluetoothAddress = publicAddress, extended: Bool = false,
        leBuffers: ACLBufferSize? = ACLBufferSize(dataLength: 27, packetCount: 4),
        sharedBuffers: ACLBufferSize = ACLBufferSize(dataLength: 0, packetCount: 0)
    ) -> [HCIOpcode: [UInt8]] {
        [
            .readLocalVersion: [0x00] + version,
            .readLocalSupportedCommands: [0x00] + supportedCommands(extended: extended),
            .leReadLocalSupportedFeatures: [0x00] + leFeatures(extended: extended),
            .readBDADDR: [0x00] + address.bytes,
            .leReadBufferSize: [0x00, UInt8(leBuffers?.dataLength ?? 0), 0, UInt8(leBuffers?.packetCount ?? 0)],
            .readBufferSize: [
                0x00, UInt8(sharedBuffers.dataLength & 0xFF), UInt8(sharedBuffers.dataLength >> 8), 0,
                UInt8(sharedBuffers.packetCount), 0, 0, 0
            ],
            .leReadAdvertisingTxPower: [0x00, 0xFC]
        ]
    }

    static func supportedCommands(extended: Bool) -> [UInt8] {
        var commands = [UInt8](repeating: 0, count: 64)
        commands[33] = 1 << 6
        commands[35] = 1 << 6
        if extended { commands[36] = 1 << 2 }
        return commands
    }

    static func leFeatures(extended: Bool) -> [UInt8] { [1 << 5, 1 << 0 | (extended ? 1 << 4 : 0), 0, 0, 0, 0, 0, 0] }

    static func bringUp(
        _ replies: [HCIOpcode: [UInt8]], stateDirectory: String, readTxPower: Bool = false
    ) async throws -> (info: ControllerInfo?, commands: [HCICommand]) {
        let bench = HostComponentBench()
        await bench.open(answering: true, replies: replies)
        let info = try await bench.bringUp(stateDirectory: stateDirectory, readTxPower: readTxPower)
        return (info, bench.transport.commands)
    }

    @Test func learnsWhatAControllerWithAPublicAddressIsAndSetsItsEventMasks() async throws {
        let directory = try temporaryDirectory("bring-up").path
        let (info, commands) = try await Self.bringUp(Self.replies(), stateDirectory: directory, readTxPower: true)
        #expect(commands == Self.inquiries + [Self.setEventMask, Self.leSetEventMask, HCICommand(opcode: .leReadAdvertisingTxPower)])
        let expected = ControllerInfo(
            version: try LocalVersion(body: Self.version), publicAddress: Self.publicAddress, address: Self.publicAddress,
            commands: try SupportedCommands(body: Self.supportedCommands(extended: false)),
            leFeatures: try LEFeatures(body: Self.leFeatures(extended: false)),
            buffers: ACLBufferSize(dataLength: 27, packetCount: 4), advertisingTxPower: -4)
        #expect(info == expected)
        #expect(info.map { [$0.usesExtendedAdvertising, $0.canSetDataLength, $0.canSet2MPHY] } == [false, true, true])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "no static address stored")
    }

    /// No public address: the static random address is made once, stored, and set on the
    /// controller for legacy advertising; the next bring-up uses the same one.
    @Test func withoutAPublicAddressTheStoredStaticAddressIsSet() async throws {
        let directory = try temporaryDirectory("bring-up").path
        let (first, commands) = try await Self.bringUp(Self.replies(address: .zero), stateDirectory: directory)
        let address = try #require(first?.address)
        #expect(address.isStaticRandom)
        #expect(first?.publicAddress == .zero)
        #expect(commands == Self.inquiries + [Self.setEventMask, Self.leSetEventMask, .leSetRandomAddress(address)])
        #expect(try await StaticAddressStore(directory: directory).loadOrCreate(writer: StateFileWriter()) == address)

        let (second, again) = try await Self.bringUp(Self.replies(address: .zero), stateDirectory: directory)
        #expect(second?.address == address)
        #expect(again.last == .leSetRandomAddress(address))
    }

    /// With extended advertising the random address goes with the advertising set: bring-up sets
    /// none on the controller.
    @Test func withExtendedAdvertisingTheStaticAddressIsNotSetOnTheController() async throws {
        let directory = try temporaryDirectory("bring-up").path
        let (info, commands) = try await Self.bringUp(Self.replies(address: .zero, extended: true), stateDirectory: directory)
        #expect(info?.usesExtendedAdvertising == true)
        #expect(info?.address.isStaticRandom == true)
        #expect(commands == Self.inquiries + [Self.setEventMask, Self.leSetEventMask])
    }

    /// A controller without LE buffers of its own shares the BR/EDR ones (Read Buffer Size); one
    /// with neither cannot be used.
    @Test func withoutLEBuffersTheSharedOnesAreUsed() async throws {
        let directory = try temporaryDirectory("bring-up").path
        let shared = ACLBufferSize(dataLength: 1021, packetCount: 8)
        let (info, commands) = try await Self.bringUp(
            Self.replies(leBuffers: nil, sharedBuffers: shared), stateDirectory: directory)
        #expect(info?.buffers == shared)
        #expect(commands == Self.inquiries + [HCICommand(opcode: .readBufferSize), Self.setEventMask, Self.leSetEventMask])

        await #expect(throws: HostError("the controller reports no ACL data buffers")) {
            try await Self.bringUp(Self.replies(leBuffers: nil), stateDirectory: directory)
        }
    }

    /// A controller that refuses LE Read Local Supported Features has no LE: bring-up stops there.
    @Test func aControllerWithoutLEIsNotSetUp() async throws {
        var replies = Self.replies()
        replies[.leReadLocalSupportedFeatures] = [HCIStatus.unknownCommand.rawValue]
        let (info, commands) = try await Self.bringUp(replies, stateDirectory: try temporaryDirectory("bring-up").path)
        #expect(info == nil)
        #expect(commands == Array(Self.inquiries.prefix(4)))
    }
}
