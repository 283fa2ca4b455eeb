// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so `swift test` of gattway never builds them.
// Run: cd Tests/Benchmarks && swift package benchmark
let package = Package(
    name: "GattwayBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise named after its directory.
        .package(name: "gattway", path: "../.."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"])
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
        )
    ]
)
