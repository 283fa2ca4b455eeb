// swift-tools-version: 6.0
import PackageDescription

// GPIO benchmark, kept out of the test suite: run with
//   swift run -c release --package-path Tests/GPIOBenchmark
let package = Package(
    name: "GPIOBenchmark",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "gattway", path: "../..")],
    targets: [
        .executableTarget(
            name: "GPIOBenchmark",
            dependencies: [
                .product(name: "GPIO", package: "gattway"),
                .product(name: "Sensors", package: "gattway")
            ],
            swiftSettings: [.swiftLanguageMode(.v6)])
    ]
)
