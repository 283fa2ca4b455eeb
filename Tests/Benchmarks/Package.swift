// swift-tools-version: 6.1
import PackageDescription

// Every Swift benchmark in one package, so `swift test` of gattway never builds them and
// `make bench` builds the root package only once more (Tests/run-benchmarks.sh runs them all):
//   GATTBenchmarks  GATT server micro-benchmarks (ordo-one benchmark): swift package benchmark
//   GPIOBenchmark   GPIO edges through the sensor path:   swift run -c release GPIOBenchmark
//   EchoPeripheral  gattway's side of roundtrip.py (write → notification against Bumble)
// The CPU-per-event benchmark (event_cost.py) runs the root package's own `gattway` executable.
let package = Package(
    name: "GattwayBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise named after its directory.
        .package(name: "gattway", path: "../.."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0")
    ],
    targets: [
        .executableTarget(
            name: "GATTBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "BluetoothGATT", package: "gattway")
            ],
            path: "Benchmarks/GATTBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "GPIOBenchmark",
            dependencies: [
                .product(name: "GPIO", package: "gattway"),
                .product(name: "Sensors", package: "gattway")
            ],
            path: "Sources/GPIOBenchmark",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "EchoPeripheral",
            dependencies: [
                .product(name: "BluetoothHost", package: "gattway"),
                .product(name: "BluetoothGATT", package: "gattway"),
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Sources/EchoPeripheral",
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
