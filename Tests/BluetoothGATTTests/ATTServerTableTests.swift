import BluetoothATT
import BluetoothCore
import Foundation
import Testing

@testable import BluetoothGATT

/// One table row: PDUs a central sends, each with the exact answer expected ("" = none).
/// `spec` cites the section of the Core Specification (or its Supplement) that makes the answer
/// the right one; a table gives its request's section to the rows that cite none.
struct Exchange: Sendable, CustomTestStringConvertible {
    let name: String
    let steps: [(request: String, response: String)]
    var security: LinkSecurity = .unencrypted
    var spec: String
    /// The server's limits, for a row about one of them.
    var configuration: GATTServer.Configuration
    /// Before the steps, the central enables robust caching and the database changes (a service
    /// is added after the fixture's), so the steps begin change-unaware (Vol 3 Part G 2.5.2.1).
    var changeUnaware: Bool
    var testDescription: String { "\(name) [\(spec)]" }

    init(
        _ name: String, _ steps: [(String, String)], security: LinkSecurity = .unencrypted, spec: String = "",
        configuration: GATTServer.Configuration = .init(), changeUnaware: Bool = false
    ) {
        self.name = name
        self.steps = steps.map {
            (
                request: $0.0.replacingOccurrences(of: " ", with: ""),
                response: $0.1.replacingOccurrences(of: " ", with: "")
            )
        }
        self.security = security
        self.spec = spec
        self.configuration = configuration
        self.changeUnaware = changeUnaware
    }

    /// Sends the steps from central 1 and checks each answer.
    func run(on server: GATTServer) {
        for step in steps {
            let sent = server.exchange(step.request).sent
            #expect(sent == (step.response.isEmpty ? [] : [step.response]), "request \(step.request)")
        }
    }
}

/// Gives `section` to the rows of a table that cite none.
private func cite(_ section: String, _ rows: [Exchange]) -> [Exchange] {
    rows.map { row in
        var cited = row
        if cited.spec.isEmpty { cited.spec = section }
        return cited
    }
}

private let permissions = "Vol 3 Part F 3.2.5 and 4, Part C 10.3: permission checks"
private let invalidPDU = "Vol 3 Part F 3.4.1.1: Invalid PDU for a PDU of the wrong length"
private let cccd = "CSS Part B 1.2: CCCD Improperly Configured; Vol 3 Part G 3.3.3.3"
private let longValues = "Vol 3 Part F 3.2.9: attribute values are at most 512 octets"
private let outOfSync = "Vol 3 Part G 2.5.2.1: Database Out Of Sync for a change-unaware client"
private let programErrors = "Vol 3 Part F 3.4.1.1 Table 3.4: the program's error code is the answer's"

private let encrypted = LinkSecurity(isEncrypted: true, isAuthenticated: false, encryptionKeySize: 16)
private let shortKey = LinkSecurity(isEncrypted: true, isAuthenticated: true, encryptionKeySize: 7, isAuthorized: true)
private let authenticated = LinkSecurity(isEncrypted: true, isAuthenticated: true, encryptionKeySize: 16)
private let authorized = LinkSecurity(isEncrypted: false, encryptionKeySize: 0, isAuthorized: true)
private let nordicServiceLE = "9ecadc240ee5a9e093f3a3b50100406e"
private let nordicTXLE = "9ecadc240ee5a9e093f3a3b50300406e"
private let nordicRXLE = "9ecadc240ee5a9e093f3a3b50200406e"
private let heartRate0to21 = (0..<22).map { UInt8($0) }.hexString

/// Request bytes in → exact response bytes out, per opcode, success and every error path.
@Suite struct ATTServerTableTests {
    static let exchangeMTU: [Exchange] = cite(
        "Vol 3 Part F 3.4.2.1, 3.4.2.2",
        [
            Exchange("MTU 247 is accepted and the server offers 517", [("02 f700", "03 0502")]),
            Exchange("MTU below 23 still answers", [("02 1000", "03 0502")]),
            Exchange("MTU request too short", [("02 00", "01 02 0000 04")], spec: invalidPDU),
            Exchange("MTU request too long", [("02 f70000", "01 02 0000 04")], spec: invalidPDU),
            Exchange("responses use the new MTU", [("02 f700", "03 0502"), ("0a 1600", "0b " + (0..<100).map { UInt8($0) }.hexString)])
        ])

    static let findInformation: [Exchange] = cite(
        "Vol 3 Part F 3.4.3.1",
        [
            Exchange("16-bit types, as many as fit", [("04 0100 0700", "05 01 0100 0028 0200 0328 0300 002a 0400 0328 0500 012a")]),
            Exchange("a 128-bit type", [("04 2000 2000", "05 02 2000 " + nordicTXLE)]),
            Exchange("stops where the UUID format changes", [("04 1f00 2100", "05 01 1f00 0328")]),
            Exchange("start handle 0", [("04 0000 ffff", "01 04 0000 01")]),
            Exchange("start above end", [("04 0500 0400", "01 04 0500 01")]),
            Exchange("nothing in range", [("04 2f00 ffff", "01 04 2f00 0a")]),
            Exchange("truncated", [("04 0100", "01 04 0000 04")], spec: invalidPDU)
        ])

    static let findByTypeValue: [Exchange] = cite(
        "Vol 3 Part F 3.4.3.3",
        [
            Exchange("primary service by 16-bit UUID", [("06 0100 ffff 0028 0d18", "07 1300 1d00")]),
            Exchange("primary service by 128-bit UUID", [("06 0100 ffff 0028 " + nordicServiceLE, "07 1e00 2a00")]),
            Exchange("no such service", [("06 0100 ffff 0028 0a18", "01 06 0100 0a")]),
            Exchange("start handle 0", [("06 0000 ffff 0028 0d18", "01 06 0000 01")]),
            Exchange("start above end", [("06 0300 0200 0028 0d18", "01 06 0300 01")]),
            Exchange("truncated", [("06 0100 ff", "01 06 0000 04")], spec: invalidPDU)
        ])

    static let readByType: [Exchange] = cite(
        "Vol 3 Part F 3.4.4.1",
        [
            Exchange(
                "characteristic declarations, as many as fit",
                [("08 0100 ffff 0328", "09 07 0200 020300002a 0400 020500012a 0600 020700042a")]),
            Exchange("device name", [("08 0100 ffff 002a", "09 09 0300 67617474776179")]),
            Exchange("include declaration", [("08 0100 ffff 0228", "09 08 1400 1000 1200 f0ff")]),
            Exchange("a dynamic value truncated to MTU-4", [("08 1600 1600 372a", "09 15 1600 " + (0..<19).map { UInt8($0) }.hexString)]),
            Exchange("encryption required", [("08 0100 ffff " + nordicRXLE, "01 08 2400 0f")], spec: permissions),
            Exchange(
                "encryption required, link encrypted", [("08 0100 ffff " + nordicRXLE, "09 04 2400 6e02")], security: encrypted,
                spec: permissions),
            Exchange("authentication required", [("08 0100 ffff f2ff", "01 08 2600 05")], security: encrypted, spec: permissions),
            Exchange("authorization required", [("08 0100 ffff f3ff", "01 08 2800 08")], spec: permissions),
            Exchange("read not permitted", [("08 0100 ffff f4ff", "01 08 2a00 02")], spec: permissions),
            Exchange("not found", [("08 0100 ffff 9999", "01 08 0100 0a")]),
            Exchange("start above end", [("08 0200 0100 0328", "01 08 0200 01")]),
            Exchange("a 3-byte type", [("08 0100 ffff 002a00", "01 08 0000 04")], spec: invalidPDU)
        ])

    static let read: [Exchange] = cite(
        "Vol 3 Part F 3.4.4.3",
        [
            Exchange("fixed value", [("0a 0300", "0b 67617474776179")]),
            Exchange("dynamic value truncated to MTU-1", [("0a 1600", "0b " + heartRate0to21)]),
            Exchange("CCCD reads as 0 until written", [("0a 1700", "0b 0000")]),
            Exchange("handle 0", [("0a 0000", "01 0a 0000 01")]),
            Exchange("no such handle", [("0a 9900", "01 0a 9900 01")]),
            Exchange(
                "Service Changed is not readable", [("0a 0a00", "01 0a 0a00 02")],
                spec: "Vol 3 Part G 7.1: Service Changed only indicates; Read Not Permitted"),
            Exchange("write-only value", [("0a 1a00", "01 0a 1a00 02")], spec: permissions),
            Exchange("insufficient encryption", [("0a 2400", "01 0a 2400 0f")], spec: permissions),
            Exchange("encrypted", [("0a 2400", "0b 6e02")], security: encrypted, spec: permissions),
            Exchange("key too short", [("0a 2400", "01 0a 2400 0c")], security: shortKey, spec: permissions),
            Exchange("insufficient authentication (unencrypted)", [("0a 2600", "01 0a 2600 05")], spec: permissions),
            Exchange(
                "insufficient authentication (encrypted, unauthenticated)", [("0a 2600", "01 0a 2600 05")], security: encrypted,
                spec: permissions),
            Exchange("authenticated", [("0a 2600", "0b f2")], security: authenticated, spec: permissions),
            Exchange("insufficient authorization", [("0a 2800", "01 0a 2800 08")], spec: permissions),
            Exchange("authorized", [("0a 2800", "0b f3")], security: authorized, spec: permissions),
            Exchange("truncated", [("0a 00", "01 0a 0000 04")], spec: invalidPDU)
        ])

    static let readBlob: [Exchange] = cite(
        "Vol 3 Part F 3.4.4.5, 3.4.4.6",
        [
            Exchange("second part of a long value", [("0c 1600 1600", "0d " + (22..<44).map { UInt8($0) }.hexString)]),
            Exchange("offset at the end", [("0c 1600 6400", "0d")]),
            Exchange("offset past the end", [("0c 1600 6500", "01 0c 1600 07")]),
            Exchange("short value at offset 0", [("0c 0300 0000", "0d 67617474776179")]),
            Exchange("a fixed value that fits one response, at an offset: Attribute Not Long", [("0c 0300 0100", "01 0c 0300 0b")]),
            Exchange("a CCCD (2 octets, fixed) at an offset: Attribute Not Long", [("0c 1700 0100", "01 0c 1700 0b")]),
            Exchange(
                "a fixed value past its end: Invalid Offset, not Attribute Not Long", [("0c 0300 0800", "01 0c 0300 07")],
                spec: "Vol 3 Part F 3.4.4.5: Invalid Offset shall be sent past the end, Attribute Not Long only may"),
            Exchange(
                "a CCCD past its end: Invalid Offset", [("0c 1700 0300", "01 0c 1700 07")],
                spec: "Vol 3 Part F 3.4.4.5: Invalid Offset shall be sent past the end, Attribute Not Long only may"),
            Exchange("a program's short value inside it: the rest", [("0c 2400 0100", "0d 02")], security: encrypted),
            Exchange("a program's short value at its end: an empty part", [("0c 2000 0100", "0d")]),
            Exchange("a program's short value past its end", [("0c 2000 0200", "01 0c 2000 07")]),
            Exchange("no such handle", [("0c 9900 0000", "01 0c 9900 01")]),
            Exchange("not readable", [("0c 0a00 0000", "01 0c 0a00 02")], spec: permissions),
            Exchange("insufficient encryption", [("0c 2400 0000", "01 0c 2400 0f")], spec: permissions),
            Exchange("truncated", [("0c 1600 00", "01 0c 0000 04")], spec: invalidPDU)
        ])

    static let readMultiple: [Exchange] = cite(
        "Vol 3 Part F 3.4.4.7",
        [
            Exchange("two values concatenated", [("0e 0300 1200", "0f 67617474776179 2a")]),
            Exchange("truncated to MTU-1", [("0e 1600 0300", "0f " + heartRate0to21)]),
            Exchange("no such handle", [("0e 0300 9900", "01 0e 9900 01")]),
            Exchange("not readable", [("0e 0300 0a00", "01 0e 0a00 02")], spec: permissions),
            Exchange("insufficient encryption", [("0e 0300 2400", "01 0e 2400 0f")], spec: permissions),
            Exchange("a single handle", [("0e 0300", "01 0e 0000 04")], spec: invalidPDU),
            Exchange("an odd byte", [("0e 0300 1200 01", "01 0e 0000 04")], spec: invalidPDU)
        ])

    static let readMultipleVariable: [Exchange] = cite(
        "Vol 3 Part F 3.4.4.11",
        [
            Exchange("lengths and values", [("20 0300 1200", "21 0700 67617474776179 0100 2a")]),
            Exchange("a long value fills the PDU", [("20 1600 0300", "21 6400 " + (0..<20).map { UInt8($0) }.hexString)]),
            Exchange("no such handle", [("20 0300 9900", "01 20 9900 01")]),
            Exchange("insufficient encryption", [("20 0300 2400", "01 20 2400 0f")], spec: permissions),
            Exchange("a single handle", [("20 0300", "01 20 0000 04")], spec: invalidPDU)
        ])

    static let readByGroupType: [Exchange] = cite(
        "Vol 3 Part F 3.4.4.9",
        [
            Exchange(
                "primary services, as many as fit",
                [("10 0100 ffff 0028", "11 06 0100 0700 0018 0800 0f00 0118 1300 1d00 0d18")]),
            Exchange("a 128-bit primary service", [("10 1e00 ffff 0028", "11 14 1e00 2a00 " + nordicServiceLE)]),
            Exchange("the last primary service", [("10 2b00 ffff 0028", "11 06 2b00 2e00 0f18")]),
            Exchange("secondary services", [("10 0100 ffff 0128", "11 06 1000 1200 f0ff")]),
            Exchange("past the last service", [("10 2f00 ffff 0028", "01 10 2f00 0a")]),
            Exchange("not a grouping type", [("10 0100 ffff 0328", "01 10 0100 10")]),
            Exchange("start handle 0", [("10 0000 ffff 0028", "01 10 0000 01")]),
            Exchange("start above end", [("10 0900 0800 0028", "01 10 0900 01")]),
            Exchange("a 3-byte type", [("10 0100 ffff 002800", "01 10 0000 04")], spec: invalidPDU)
        ])

    static let write: [Exchange] = cite(
        "Vol 3 Part F 3.4.5.1",
        [
            Exchange("enable notifications", [("12 1700 0100", "13"), ("0a 1700", "0b 0100")]),
            Exchange("indications on a notify-only characteristic", [("12 1700 0200", "01 12 1700 fd")], spec: cccd),
            Exchange("reserved CCCD bits", [("12 1700 0400", "01 12 1700 fd")], spec: cccd),
            Exchange("CCCD value of one byte", [("12 1700 01", "01 12 1700 0d")]),
            Exchange("dynamic value", [("12 1a00 01", "13")]),
            Exchange("the program refuses", [("12 1a00 ee", "01 12 1a00 80")]),
            Exchange(
                "longer than 512", [("02 0502", "03 0502"), ("12 1a00 " + String(repeating: "00", count: 513), "01 12 1a00 0d")],
                spec: longValues),
            Exchange("exactly 512", [("02 0502", "03 0502"), ("12 1a00 " + String(repeating: "00", count: 512), "13")], spec: longValues),
            Exchange(
                "a request longer than the MTU", [("12 1a00 " + String(repeating: "00", count: 21), "01 12 0000 04")],
                spec: "Vol 3 Part F 3.2.8, 3.4.1.1: no PDU exceeds ATT_MTU; Invalid PDU"),
            Exchange("a request exactly the MTU", [("12 1a00 " + String(repeating: "00", count: 20), "13")], spec: "Vol 3 Part F 3.2.8"),
            Exchange("fixed value", [("12 0300 41", "01 12 0300 03")]),
            Exchange("Database Hash", [("12 0f00 00", "01 12 0f00 03")]),
            Exchange("no such handle", [("12 9900 00", "01 12 9900 01")]),
            Exchange("insufficient encryption", [("12 2a00 01", "01 12 2a00 0f")], spec: permissions),
            Exchange("encrypted", [("12 2a00 01", "13")], security: encrypted, spec: permissions),
            Exchange("key too short", [("12 2a00 01", "01 12 2a00 0c")], security: shortKey, spec: permissions),
            Exchange("truncated", [("12 00", "01 12 0000 04")], spec: invalidPDU),
            Exchange(
                "client features can be set, not cleared",
                [("12 0d00 01", "13"), ("0a 0d00", "0b 01"), ("12 0d00 00", "01 12 0d00 13")],
                spec: "Vol 3 Part G 7.2: a client may not clear a feature it enabled"),
            Exchange(
                "client features of zero bytes", [("12 0d00", "01 12 0d00 0d")],
                spec: "Vol 3 Part G 7.2, Vol 3 Part F 3.4.5.1: Invalid Attribute Value Length")
        ])

    static let preparedWrites: [Exchange] = cite(
        "Vol 3 Part F 3.4.6.1, 3.4.6.3",
        [
            Exchange(
                "prepare, prepare, execute",
                [
                    ("16 1a00 0000 0102", "17 1a00 0000 0102"), ("16 1a00 0200 03", "17 1a00 0200 03"), ("18 01", "19")
                ]),
            Exchange("cancel", [("16 1a00 0000 0102", "17 1a00 0000 0102"), ("18 00", "19")]),
            Exchange("execute with an empty queue", [("18 01", "19")]),
            Exchange(
                "bad flags", [("18 02", "01 18 0000 04")],
                spec: "Vol 3 Part F 3.4.6.3: flags other than 0x00 and 0x01 are reserved; Invalid PDU"),
            Exchange("prepare to no such handle", [("16 9900 0000 01", "01 16 9900 01")]),
            Exchange("prepare to a fixed value", [("16 0300 0000 01", "01 16 0300 03")]),
            Exchange("prepare needing encryption", [("16 2a00 0000 01", "01 16 2a00 0f")], spec: permissions),
            Exchange(
                "prepare needing encryption, encrypted", [("16 2a00 0000 01", "17 2a00 0000 01")], security: encrypted,
                spec: permissions),
            Exchange(
                "prepare needing encryption, key too short", [("16 2a00 0000 01", "01 16 2a00 0c")], security: shortKey,
                spec: permissions),
            Exchange(
                "a CCCD in two parts is one value",
                [("16 1700 0000 01", "17 1700 0000 01"), ("16 1700 0100 00", "17 1700 0100 00"), ("18 01", "19"), ("0a 1700", "0b 0100")]),
            Exchange(
                "a CCCD part at a non-zero offset: Invalid Offset",
                [("16 1700 0100 00", "17 1700 0100 00"), ("18 01", "01 18 1700 07"), ("0a 1700", "0b 0000")],
                spec: "Vol 3 Part F 3.4.6.3: Invalid Offset; Vol 3 Part G 3.3.3.3: a CCCD is 2 octets from offset 0"),
            Exchange(
                "Client Supported Features at a non-zero offset: Invalid Offset",
                [("16 0d00 0100 01", "17 0d00 0100 01"), ("18 01", "01 18 0d00 07"), ("0a 0d00", "0b 00")],
                spec: "Vol 3 Part F 3.4.6.3: Invalid Offset; Vol 3 Part G 7.2: Client Supported Features starts at offset 0"),
            Exchange(
                "the queue is full: Prepare Queue Full, and the queued parts stay",
                [
                    ("16 1700 0000 01", "17 1700 0000 01"), ("16 1700 0100 00", "17 1700 0100 00"),
                    ("16 1700 0200 00", "01 16 1700 09"), ("18 01", "19"), ("0a 1700", "0b 0100")
                ],
                spec: "Vol 3 Part F 3.4.6.1: Prepare Queue Full", configuration: .init(preparedWriteQueueLimit: 2)),
            Exchange("prepare truncated", [("16 1a00 00", "01 16 0000 04")], spec: invalidPDU),
            Exchange("offset past 512", [("16 1a00 0102 01", "17 1a00 0102 01"), ("18 01", "01 18 1a00 07")]),
            Exchange("value past 512", [("16 1a00 ff01 0102", "17 1a00 ff01 0102"), ("18 01", "01 18 1a00 0d")]),
            Exchange(
                "the program refuses the batch",
                [
                    ("16 1700 0000 0100", "17 1700 0000 0100"), ("16 1a00 0000 ee", "17 1a00 0000 ee"),
                    ("18 01", "01 18 1a00 80"), ("0a 1700", "0b 0000")
                ]),
            Exchange(
                "a bad CCCD value fails the batch",
                [
                    ("16 1a00 0000 01", "17 1a00 0000 01"), ("16 1700 0000 0300", "17 1700 0000 0300"), ("18 01", "01 18 1700 fd")
                ]),
            Exchange(
                "the queue is discarded after an error",
                [
                    ("16 1a00 0102 01", "17 1a00 0102 01"), ("18 01", "01 18 1a00 07"), ("18 01", "19")
                ])
        ])

    static let changeUnaware: [Exchange] = cite(
        outOfSync,
        [
            Exchange("a read: Database Out Of Sync, then served", [("0a 0300", "01 0a 0000 12"), ("0a 0300", "0b 67617474776179")]),
            Exchange("a write", [("12 1a00 01", "01 12 0000 12"), ("12 1a00 01", "13")]),
            Exchange("a prepared write", [("16 1a00 0000 01", "01 16 0000 12"), ("16 1a00 0000 01", "17 1a00 0000 01")]),
            Exchange("a Read Multiple", [("0e 0300 1200", "01 0e 0000 12")]),
            Exchange(
                "Read By Type of a value over part of the database",
                [("08 0100 0700 002a", "01 08 0000 12"), ("08 0100 0700 002a", "09 09 0300 67617474776179")]),
            Exchange("commands are ignored", [("52 1a00 05", ""), ("0a 0300", "01 0a 0000 12")]),
            Exchange("Exchange MTU is answered", [("02 f700", "03 0502"), ("0a 0300", "01 0a 0000 12")]),
            Exchange(
                "primary service discovery is answered",
                [("10 0100 ffff 0028", "11 06 0100 0700 0018 0800 0f00 0118 1300 1d00 0d18"), ("0a 0300", "01 0a 0000 12")]),
            Exchange(
                "discovery by service UUID is answered", [("06 0100 ffff 0028 0d18", "07 1300 1d00"), ("0a 0300", "01 0a 0000 12")]),
            Exchange(
                "characteristic discovery is answered",
                [("08 0100 ffff 0328", "09 07 0200 020300002a 0400 020500012a 0600 020700042a"), ("0a 0300", "01 0a 0000 12")]),
            Exchange(
                "characteristic discovery within a service is answered",
                [("08 0100 0700 0328", "09 07 0200 020300002a 0400 020500012a 0600 020700042a"), ("0a 0300", "01 0a 0000 12")]),
            Exchange(
                "descriptor discovery is answered",
                [("04 0100 0700", "05 01 0100 0028 0200 0328 0300 002a 0400 0328 0500 012a"), ("0a 0300", "01 0a 0000 12")]),
            Exchange(
                "Read By Type of a value over every handle is answered",
                [("08 0100 ffff 002a", "09 09 0300 67617474776179"), ("0a 0300", "01 0a 0000 12")])
        ]
    ).map { row in
        var unaware = row
        unaware.changeUnaware = true
        return unaware
    }

    static let unanswered: [Exchange] = cite(
        "Vol 3 Part F 3.3.1, 3.4.5.3, 3.4.5.4: commands and unsolicited PDUs are never answered",
        [
            Exchange("write command", [("52 1a00 05", "")]),
            Exchange("write command to a fixed value", [("52 0300 05", "")]),
            Exchange("malformed write command", [("52 1a", "")]),
            Exchange("signed write command", [("d2 1a00 05 000102030405060708090a0b", "")]),
            Exchange("write command longer than the MTU", [("52 1a00 " + String(repeating: "00", count: 21), "")]),
            Exchange("confirmation with no indication outstanding", [("1e", "")]),
            Exchange("a notification from the central", [("1b 0100 00", "")]),
            Exchange("an error response from the central", [("01 0a 0100 0a", "")]),
            Exchange("unknown command", [("7f 0102", "")]),
            Exchange("empty PDU", [("", "")])
        ])

    static let unsupported: [Exchange] = cite(
        "Vol 3 Part F 3.4.1.1: Request Not Supported",
        [
            Exchange("unknown request opcode", [("3f 0102", "01 3f 0000 06")]),
            Exchange("another unknown request opcode", [("14", "01 14 0000 06")])
        ])

    @Test(
        arguments: exchangeMTU + findInformation + findByTypeValue + readByType + read + readBlob
            + readMultiple + readMultipleVariable + readByGroupType + write + preparedWrites + changeUnaware
            + unanswered + unsupported)
    func answersExactly(_ exchange: Exchange) throws {
        let (server, _, _) = try Fixture.server(configuration: exchange.configuration)
        server.connect(CentralID(1), security: exchange.security)
        if exchange.changeUnaware {
            #expect(server.exchange("120d0001").sent == ["13"], "robust caching enabled")
            try server.addService(GATTService(uuid: BluetoothUUID(0xCCC0), characteristics: []), now: serverStart)
            _ = server.takeOutput()
        }
        exchange.run(on: server)
    }

    /// What the fixture does not hold: values the program fails to read, and values whose writes
    /// need an authenticated or an authorized link.
    ///
    /// | handles | service |
    /// |---|---|
    /// | 16–24 | primary FFE0: FFE1 read, Unlikely Error (18); FFE2 read, application error 0x80 (20); FFE3 write authenticated (22); FFE4 write authorized (24) |
    static func otherServer() throws -> GATTServer {
        let server = GATTServer(
            handlers: GATTRequestHandlers(
                read: { request in
                    request.characteristic.uuid == BluetoothUUID(0xFFE1) ? .failure(.unlikelyError) : .failure(.application(0x80))
                },
                write: { _ in nil }))
        _ = try server.addService(
            GATTService(
                uuid: BluetoothUUID(0xFFE0),
                characteristics: [
                    GATTCharacteristic(uuid: BluetoothUUID(0xFFE1), properties: .read, permissions: .readable, value: .dynamic),
                    GATTCharacteristic(uuid: BluetoothUUID(0xFFE2), properties: .read, permissions: .readable, value: .dynamic),
                    GATTCharacteristic(
                        uuid: BluetoothUUID(0xFFE3), properties: .write, permissions: .writeAuthenticationRequired, value: .dynamic),
                    GATTCharacteristic(
                        uuid: BluetoothUUID(0xFFE4), properties: .write, permissions: .writeAuthorizationRequired, value: .dynamic)
                ]), now: serverStart)
        return server
    }

    static let programReadFailures: [Exchange] = cite(
        programErrors,
        [
            Exchange("Read: Unlikely Error", [("0a 1200", "01 0a 1200 0e")]),
            Exchange("Read: an application error", [("0a 1400", "01 0a 1400 80")]),
            Exchange("Read Blob", [("0c 1200 0000", "01 0c 1200 0e")]),
            Exchange(
                "Read By Type: the first match's failure", [("08 0100 ffff e1ff", "01 08 1200 0e")],
                spec: "Vol 3 Part F 3.4.4.1; " + programErrors),
            Exchange("Read Multiple", [("0e 0300 1200", "01 0e 1200 0e")], spec: "Vol 3 Part F 3.4.4.7; " + programErrors),
            Exchange(
                "Read Multiple Variable", [("20 0300 1400", "01 20 1400 80")], spec: "Vol 3 Part F 3.4.4.11; " + programErrors)
        ])

    static let securedWrites: [Exchange] = cite(
        permissions,
        [
            Exchange("authenticated write, not encrypted", [("12 1600 01", "01 12 1600 05")]),
            Exchange("authenticated write, encrypted unauthenticated", [("12 1600 01", "01 12 1600 05")], security: encrypted),
            Exchange("authenticated write, key too short", [("12 1600 01", "01 12 1600 0c")], security: shortKey),
            Exchange("authenticated write, authenticated", [("12 1600 01", "13")], security: authenticated),
            Exchange("authenticated prepare, not encrypted", [("16 1600 0000 01", "01 16 1600 05")]),
            Exchange("authenticated prepare, encrypted unauthenticated", [("16 1600 0000 01", "01 16 1600 05")], security: encrypted),
            Exchange("authenticated prepare, key too short", [("16 1600 0000 01", "01 16 1600 0c")], security: shortKey),
            Exchange(
                "authenticated prepare, authenticated", [("16 1600 0000 01", "17 1600 0000 01"), ("18 01", "19")],
                security: authenticated),
            Exchange("authorized write, not authorized", [("12 1800 01", "01 12 1800 08")]),
            Exchange("authorized write, authorized", [("12 1800 01", "13")], security: authorized),
            Exchange("authorized prepare, not authorized", [("16 1800 0000 01", "01 16 1800 08")])
        ])

    @Test(arguments: programReadFailures + securedWrites)
    func answersExactlyFromTheOtherDatabase(_ exchange: Exchange) throws {
        let server = try Self.otherServer()
        server.connect(CentralID(1), security: exchange.security)
        exchange.run(on: server)
    }

    /// A client that got exactly ATT_MTU-1 octets from a Read Request cannot tell whether more
    /// follow, so it asks with a Read Blob at that offset; a value the program serves answers
    /// with an empty part, not Attribute Not Long (Vol 3 Part F 3.4.4.5, 3.4.4.6).
    @Test func aValueOfExactlyMTUMinusOneEndsWithAnEmptyBlob() throws {
        let value = (0..<22).map { UInt8($0) }
        let server = GATTServer(handlers: GATTRequestHandlers(read: { _ in .success(value) }, write: { _ in nil }))
        _ = try server.addService(
            GATTService(
                uuid: BluetoothUUID(0xFFE0),
                characteristics: [
                    GATTCharacteristic(uuid: BluetoothUUID(0xFFE1), properties: .read, permissions: .readable, value: .dynamic)
                ]), now: serverStart)
        server.connect(CentralID(1))
        // GAP (1–7) and GATT (8–15) come first: the service is 16, its value 18 (0x0012).
        #expect(server.exchange("0a1200").sent == ["0b" + value.hexString])
        #expect(server.exchange("0c12001600").sent == ["0d"])
        #expect(server.exchange("0c12001700").sent == ["010c120007"])
    }

    @Test func executeDeliversOneJoinedBatch() throws {
        let (server, log, services) = try Fixture.server()
        server.connect(CentralID(1))
        _ = server.exchange("161a0000000102")
        _ = server.exchange("161a00020003")
        _ = server.exchange("162000000009")
        #expect(server.exchange("1801").sent == ["19"])
        let controlPoint = try #require(services[1].characteristic(BluetoothUUID(0x2A39)))
        let tx = try #require(services[2].characteristic(Fixture.nordicTX))
        #expect(
            log.batches == [
                [
                    GATTWriteRequest(central: CentralID(1), characteristic: controlPoint, offset: 0, value: [1, 2, 3], kind: .prepared),
                    GATTWriteRequest(central: CentralID(1), characteristic: tx, offset: 0, value: [9], kind: .prepared)
                ]
            ])
    }

    @Test func refusedBatchAppliesNothing() throws {
        let (server, log, _) = try Fixture.server()
        server.connect(CentralID(1))
        #expect(server.exchange("16 1700 0000 0100".replacingOccurrences(of: " ", with: "")).sent == ["17170000000100"])
        #expect(server.exchange("16 1a00 0000 ee".replacingOccurrences(of: " ", with: "")).sent == ["171a000000ee"])
        let (sent, events) = server.exchange("1801")
        #expect(sent == ["01181a0080"])
        #expect(events.isEmpty, "the CCCD in the refused batch must not subscribe")
        #expect(log.batches.isEmpty)
        #expect(server.snapshot(of: CentralID(1))?.clientConfigurations == [:])
    }

    /// A value prepared to an attribute that a database change removes before Execute Write
    /// cannot be written: Execute Write answers Invalid Handle with the queued handle (Vol 3
    /// Part F 3.4.6.3), writes none of the batch, and discards the queue, even though a service
    /// of the same shape now holds that handle.
    @Test func executeAfterThePreparedAttributeWasRemovedAnswersInvalidHandle() throws {
        let (server, log, services) = try Fixture.server()
        server.connect(CentralID(1))
        #expect(server.exchange("161a00000001").sent == ["171a00000001"])
        #expect(server.exchange("162000000009").sent == ["172000000009"])
        try server.removeService(services[1].id, now: serverStart)
        let republished = try server.addService(Fixture.heartRate(including: services[0].id), now: serverStart)
        #expect(republished.handles == services[1].handles, "the same handles, now another attribute's")
        _ = server.takeOutput()
        #expect(server.exchange("1801").sent == ["01181a0001"])
        #expect(log.batches.isEmpty)
        #expect(server.exchange("1801").sent == ["19"])
        #expect(log.batches.isEmpty)
    }

    @Test func eachWriteSaysWhichATTWriteCarriedIt() throws {
        let (server, log, _) = try Fixture.server()
        server.connect(CentralID(1))
        #expect(server.exchange("121a0001").sent == ["13"])
        #expect(server.exchange("521a0002").sent.isEmpty)
        #expect(server.exchange("161a00000003").sent == ["171a00000003"])
        #expect(server.exchange("1801").sent == ["19"])
        #expect(log.batches.map { $0.map(\.value) } == [[[1]], [[2]], [[3]]])
        #expect(log.batches.map { $0.map(\.kind) } == [[.request], [.command], [.prepared]])
    }

    @Test func writeCommandReachesTheProgramUnanswered() throws {
        let (server, log, _) = try Fixture.server()
        server.connect(CentralID(1))
        #expect(server.exchange("521a0005").sent.isEmpty)
        #expect(log.batches.map { $0.map(\.value) } == [[[5]]])
        #expect(server.exchange("521a00ee").sent.isEmpty)
        #expect(server.exchange("52030005").sent.isEmpty)
        #expect(log.batches.count == 1)
    }
}
