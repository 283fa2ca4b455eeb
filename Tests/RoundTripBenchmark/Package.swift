// swift-tools-version: 6.0
import PackageDescription

// Write → echoed-notification round trip, kept out of the test suite. `run.sh` builds the echo
// peripheral in release mode and compares it against a Bumble GATT server on the same virtual link.
let package = Package(
    name: "RoundTripBenchmark",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "gattway", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0")
    ],
    targets: [
        .executableTarget(
            name: "EchoPeripheral",
            dependencies: [
                .product(name: "BluetoothHost", package: "gattway"),
                .product(name: "BluetoothGATT", package: "gattway"),
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: [.swiftLanguageMode(.v6)])
    ]
)
