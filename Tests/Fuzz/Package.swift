// swift-tools-version: 6.0
import PackageDescription

// libFuzzer targets, kept out of the main build: one executable per parser, each built with
// `--sanitize fuzzer --sanitize address` by run-short.sh / run-long.sh. Seed corpora are in Corpus/<target>.
// The entry point is a `@_cdecl("LLVMFuzzerTestOneInput")` function, so each module is compiled
// with -parse-as-library (libFuzzer supplies `main`).
let fuzzSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .unsafeFlags(["-parse-as-library"])
]

let package = Package(
    name: "Fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "gattway", path: "../..")],
    targets: [
        .executableTarget(
            name: "FuzzConfig",
            dependencies: [.product(name: "Config", package: "gattway")],
            swiftSettings: fuzzSettings),
        .executableTarget(
            name: "FuzzSetPayload",
            dependencies: [.product(name: "Values", package: "gattway")],
            swiftSettings: fuzzSettings),
        .executableTarget(
            name: "FuzzATTServer",
            dependencies: [.product(name: "BluetoothGATT", package: "gattway")],
            swiftSettings: fuzzSettings),
        .executableTarget(
            name: "FuzzSMP",
            dependencies: [.product(name: "BluetoothSMP", package: "gattway")],
            swiftSettings: fuzzSettings),
        .executableTarget(
            name: "FuzzH4Framer",
            dependencies: [.product(name: "BluetoothL2CAP", package: "gattway")],
            swiftSettings: fuzzSettings),
        .executableTarget(
            name: "FuzzHCIEvent",
            dependencies: [.product(name: "BluetoothL2CAP", package: "gattway")],
            swiftSettings: fuzzSettings),
        .executableTarget(
            name: "FuzzL2CAP",
            dependencies: [.product(name: "BluetoothL2CAP", package: "gattway")],
            swiftSettings: fuzzSettings)
    ]
)
