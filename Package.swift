// swift-tools-version: 6.0
import PackageDescription

// Layering (bottom to top): C module targets → thin wrappers (GPIO, MQTT client, BluetoothHCI transports)
// → protocol layers (BluetoothCore → ATT → GATT, HCI → L2CAP → Host) → Sensors/Values/Notify →
// Gateway (wiring) → the `gattway` executable. Nothing above a wrapper imports a C module.

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    // Release builds specialize generics across modules (the notify engine, the streams between
    // layers): without it the event path spends a tenth of its time instantiating generic
    // metadata at run time (docs/performance.md).
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
    // Release builds leave out the run-time exclusivity checks (swift_beginAccess on every access
    // to a class's or actor's stored property: 8 % of the instructions per notification); debug
    // builds, which every test runs, keep them and would trap on a violation.
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
    // Each function in a section of its own, so the release link can lay the event path's out
    // together (`hotFunctionsOrder`) and drop what nothing calls.
    .unsafeFlags(["-Xfrontend", "-function-sections"], .when(configuration: .release)),
    // Release builds copy and destroy values with code made for each type, not from type
    // layouts: with those, a notification's transmission, packets and samples went through
    // calls to their types' value witnesses. 8,555 → 8,429 instructions per notification, for
    // 41 KB more code (docs/performance.md).
    .unsafeFlags(["-Xfrontend", "-disable-type-layout"], .when(configuration: .release))
]

/// The functions the event path runs, hottest first (Tests/Benchmarks/hot_functions.py writes
/// it from callgrind). Linked next to each other, gattway's own take 28 consecutive pages instead
/// of 150 scattered over the binary's text, which the CPU reaches again at every event after
/// another process ran (docs/performance.md, "Code layout").
let hotFunctionsOrder = String(#filePath.dropLast("Package.swift".count)) + "Sources/gattway/HotFunctions.order"

let package = Package(
    name: "gattway",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "gattway", targets: ["gattway"]),
        // For the benchmark package (Tests/Benchmarks: GPIOBenchmark).
        .library(name: "GPIO", targets: ["GPIO", "GPIOLibgpiod"]),
        .library(name: "Sensors", targets: ["Sensors", "StateFile"]),
        // The GATT server as a library, for the benchmark package in Tests/Benchmarks and the
        // fuzz package.
        .library(name: "BluetoothGATT", targets: ["BluetoothATT", "BluetoothGATT", "LoopClock"]),
        // The BLE host as a library, for the round-trip benchmark (Tests/Benchmarks: EchoPeripheral).
        .library(name: "BluetoothHost", targets: ["BluetoothHost", "StateFile"]),
        // For the fuzz package (Tests/Fuzz): the parsers it feeds.
        .library(name: "Config", targets: ["Config"]),
        .library(name: "Values", targets: ["Values"]),
        .library(name: "BluetoothSMP", targets: ["BluetoothSMP", "LoopClock"]),
        .library(name: "BluetoothL2CAP", targets: ["BluetoothHCI", "BluetoothL2CAP"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.0")
    ],
    targets: [
        // MARK: C libraries, each entering through one module target.
        // BlueZ's headers only (the user channel's socket address, constants and ioctls): gattway
        // calls no function of libbluetooth, so it is not linked, and the package does not depend
        // on it. No pkg-config either: `bluez.pc` would add `-lbluetooth`.
        .systemLibrary(name: "CBlueZ", path: "Sources/CBlueZ"),
        .systemLibrary(
            name: "CMosquitto", path: "Sources/CMosquitto", pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(
            name: "CGPIOD", path: "Sources/CGPIOD", pkgConfig: "libgpiod",
            providers: [.apt(["libgpiod-dev"])]),
        .systemLibrary(
            name: "CYAML", path: "Sources/CYAML", pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]),
        // One small API over libgpiod 1.6 and 2.x, chosen at compile time.
        .target(name: "CGPIODShim", dependencies: ["CGPIOD"], path: "Sources/CGPIODShim"),

        // MARK: The event loop: one thread owning the event descriptors, timers and hot actors.
        .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
        // The thread-local naming the loop of the calling thread, read inline by isolation checks.
        .target(name: "CLoopThread", path: "Sources/CLoopThread"),
        .systemLibrary(name: "CSpawn", path: "Sources/CSpawn"),
        // A moment on the loop's clock: the one time base of every deadline, for the pure layers
        // too (no C, no loop).
        .target(name: "LoopClock", path: "Sources/LoopClock", swiftSettings: swiftSettings),
        .target(name: "EventLoop", dependencies: ["CEpoll", "CLoopThread", "LoopClock"], path: "Sources/EventLoop", swiftSettings: swiftSettings),

        // MARK: Persistence: the one way to write a file under the state directory.
        .target(name: "StateFile", path: "Sources/StateFile", swiftSettings: swiftSettings),

        // MARK: Bluetooth host, one target per protocol layer.
        .target(
            name: "BluetoothCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto")
            ],
            path: "Sources/Bluetooth/Core", swiftSettings: swiftSettings),
        .target(
            name: "BluetoothATT", dependencies: ["BluetoothCore"],
            path: "Sources/Bluetooth/ATT", swiftSettings: swiftSettings),
        .target(
            name: "BluetoothGATT",
            dependencies: [
                "EventLoop", "LoopClock", "BluetoothCore", "BluetoothATT",
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Sources/Bluetooth/GATT", swiftSettings: swiftSettings),
        .target(
            name: "BluetoothSMP",
            dependencies: ["BluetoothCore", "LoopClock", "StateFile", .product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/Bluetooth/SMP", swiftSettings: swiftSettings),
        // The HCI codec: packets, commands, events, H4 framing, the transport's interface and
        // spec. Pure, so the configuration can name a transport without linking libbluetooth.
        .target(
            name: "BluetoothHCI", dependencies: ["BluetoothCore"],
            path: "Sources/Bluetooth/HCI", swiftSettings: swiftSettings),
        // The transports behind `HCITransportSpec.open()`: user channel, TCP, Unix, serial. The
        // only target that sees BlueZ.
        .target(
            name: "BluetoothHCITransport", dependencies: ["EventLoop", "BluetoothHCI", "CBlueZ"],
            path: "Sources/Bluetooth/HCITransport", swiftSettings: swiftSettings),
        .target(
            name: "BluetoothL2CAP", dependencies: ["BluetoothCore", "BluetoothHCI"],
            path: "Sources/Bluetooth/L2CAP", swiftSettings: swiftSettings),
        .target(
            name: "BluetoothHost",
            dependencies: [
                "EventLoop", "LoopClock", "BluetoothCore", "BluetoothHCI", "BluetoothHCITransport", "BluetoothL2CAP",
                "BluetoothATT", "BluetoothGATT", "BluetoothSMP", "StateFile", .product(name: "Logging", package: "swift-log")
            ],
            path: "Sources/Bluetooth/Host", swiftSettings: swiftSettings),

        // MARK: Reading the configuration: YAML nodes to typed values with errors naming path and
        // line. Pure (no C library), so each sensor kind reads its own schema beside its engine.
        .target(name: "ConfigReading", path: "Sources/ConfigReading", swiftSettings: swiftSettings),

        // MARK: Sensors side.
        // Lines by name, edge events, the backend interface and the simulator: no C library, so
        // the layers above can use its types without linking libgpiod.
        .target(
            name: "GPIO", dependencies: ["EventLoop", "LoopClock"],
            path: "Sources/GPIO", swiftSettings: swiftSettings),
        // The libgpiod backend: the only target that sees libgpiod (through CGPIODShim).
        .target(
            name: "GPIOLibgpiod", dependencies: ["GPIO", "EventLoop", "LoopClock", "CGPIODShim"],
            path: "Sources/GPIOLibgpiod", swiftSettings: swiftSettings),
        .target(
            name: "Sensors",
            dependencies: [
                "EventLoop", "LoopClock", "GPIO", "StateFile", "ConfigReading", "Values", .product(name: "Logging", package: "swift-log")
            ],
            path: "Sources/Sensors", swiftSettings: swiftSettings),
        .target(
            name: "Values", dependencies: ["BluetoothCore"],
            path: "Sources/Values", swiftSettings: swiftSettings),
        .target(
            name: "Notify", dependencies: ["Values", "LoopClock"],
            path: "Sources/Notify", swiftSettings: swiftSettings),

        // MARK: MQTT mirror.
        // The mirror's topic model, Home Assistant discovery, messages and connection settings:
        // pure, so the configuration uses its types without linking libmosquitto.
        .target(name: "MQTTMirror", dependencies: ["LoopClock"], path: "Sources/MQTT/Mirror", swiftSettings: swiftSettings),
        // The broker connection: the only target that sees libmosquitto.
        .target(
            name: "MQTTClient",
            dependencies: ["EventLoop", "LoopClock", "MQTTMirror", "CMosquitto", .product(name: "Logging", package: "swift-log")],
            path: "Sources/MQTT/Client", swiftSettings: swiftSettings),
        // The mirror run over a client: outbox, backlog hold, heartbeats, discovery, `/set`.
        .target(
            name: "MQTTService",
            dependencies: [
                "EventLoop", "LoopClock", "StateFile", "MQTTMirror", "MQTTClient", .product(name: "Logging", package: "swift-log")
            ],
            path: "Sources/MQTT/Service", swiftSettings: swiftSettings),

        // MARK: Configuration, wiring, executable.
        // libyaml's event parser, wrapped once: YAML text in, nodes with their lines out.
        .target(name: "YAML", dependencies: ["CYAML", "ConfigReading"], path: "Sources/YAML", swiftSettings: swiftSettings),
        .target(
            name: "Config",
            dependencies: ["BluetoothCore", "BluetoothHCI", "ConfigReading", "MQTTMirror", "Values", "Notify", "GPIO", "Sensors", "YAML"],
            path: "Sources/Config", swiftSettings: swiftSettings),
        .target(
            name: "Gateway",
            dependencies: [
                "EventLoop", "LoopClock", "Config", "BluetoothCore", "BluetoothATT", "BluetoothGATT", "BluetoothL2CAP",
                "BluetoothSMP", "BluetoothHost", "GPIO", "GPIOLibgpiod", "Sensors",
                "Values", "Notify", "MQTTMirror", "MQTTClient", "MQTTService", "StateFile",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle")
            ],
            path: "Sources/Gateway", swiftSettings: swiftSettings),
        // Development only: the helper processes of `gattway demo` (mosquitto, Bumble's virtual
        // controller and phone from Tests/harness) and the way the tests start theirs. Not part of
        // the service the `Gateway` library builds; the executable carries it for `gattway demo`.
        .target(
            name: "DevelopmentHarness",
            dependencies: [
                "BluetoothCore", "MQTTMirror", "MQTTClient", "CSpawn", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ],
            path: "Sources/DevelopmentHarness", swiftSettings: swiftSettings),
        .executableTarget(
            name: "gattway",
            dependencies: [
                "Gateway", "DevelopmentHarness", "EventLoop", "Config", "ConfigReading", "GPIO", "GPIOLibgpiod", "BluetoothSMP",
                "BluetoothCore",
                "StateFile",
                "BluetoothHCI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ],
            path: "Sources/gattway", exclude: ["HotFunctions.order"], swiftSettings: swiftSettings,
            // The shipped binary, 26.7 → 23.1 MB stripped and 20.3 → 18.1 MB idle RSS
            // (docs/performance.md): swiftc links an executable with --export-dynamic, which put
            // every public symbol of every module in the dynamic symbol table (20,000 symbols,
            // 1.8 MB) as roots --gc-sections could not drop, and nothing looks symbols up in gattway
            // at run time. lld packs the 60,000 relative relocations of a position-independent
            // executable (1.4 MB, read at every start) into 12 kB of DT_RELR (glibc 2.36: Debian 12
            // and later; dpkg-shlibdeps puts it in the package's Depends). The arm64 cross build
            // links with lld too (deploy/cross). The event path's functions go first, together
            // (`hotFunctionsOrder`; a name the binary no longer has is skipped without a warning).
            linkerSettings: [
                .unsafeFlags(
                    [
                        "-use-ld=lld", "-Xlinker", "--no-export-dynamic", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                        "-Xlinker", "--symbol-ordering-file=\(hotFunctionsOrder)", "-Xlinker", "--no-warn-symbol-ordering"
                    ],
                    .when(configuration: .release))
            ]),

        // MARK: Tests, one target beside each layer.
        // The end-to-end harness shared by the test targets: Bumble's virtual controller and phones,
        // mosquitto, and the built `gattway` executable as child processes.
        .target(
            name: "TestHarness",
            dependencies: [
                "DevelopmentHarness", "BluetoothCore", "EventLoop", "LoopClock", "MQTTMirror", "MQTTClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TestHarness", swiftSettings: swiftSettings),
        .testTarget(
            name: "EventLoopTests", dependencies: ["EventLoop", "LoopClock"],
            path: "Tests/EventLoopTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "BluetoothCoreTests", dependencies: ["BluetoothCore"],
            path: "Tests/BluetoothCoreTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "BluetoothATTTests", dependencies: ["BluetoothATT", "BluetoothCore"],
            path: "Tests/BluetoothATTTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "BluetoothGATTTests", dependencies: ["BluetoothGATT", "BluetoothATT", "BluetoothCore", "LoopClock", "TestHarness"],
            path: "Tests/BluetoothGATTTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "BluetoothSMPTests",
            dependencies: ["BluetoothSMP", "BluetoothCore", "LoopClock", "TestHarness", .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/BluetoothSMPTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "BluetoothHCITests", dependencies: ["BluetoothHCI", "BluetoothCore"],
            path: "Tests/BluetoothHCITests", swiftSettings: swiftSettings),
        .testTarget(
            name: "BluetoothHCITransportTests",
            dependencies: ["BluetoothHCITransport", "BluetoothHCI", "BluetoothCore", "TestHarness"],
            path: "Tests/BluetoothHCITransportTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "BluetoothL2CAPTests", dependencies: ["BluetoothL2CAP", "BluetoothHCI", "BluetoothCore"],
            path: "Tests/BluetoothL2CAPTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "BluetoothHostTests",
            dependencies: [
                "BluetoothHost", "EventLoop", "BluetoothCore", "BluetoothHCI", "BluetoothL2CAP", "BluetoothATT",
                "BluetoothGATT", "BluetoothSMP", "StateFile", "TestHarness", .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/BluetoothHostTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "GPIOTests", dependencies: ["GPIO", "EventLoop", "TestHarness"],
            path: "Tests/GPIOTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "GPIOLibgpiodTests", dependencies: ["GPIOLibgpiod", "GPIO", "EventLoop", "TestHarness"],
            path: "Tests/GPIOLibgpiodTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "SensorsTests",
            dependencies: ["Sensors", "Config", "MQTTMirror", "GPIO", "GPIOLibgpiod", "EventLoop", "StateFile", "TestHarness"],
            path: "Tests/SensorsTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "ValuesTests", dependencies: ["Values", "BluetoothCore"],
            path: "Tests/ValuesTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "NotifyTests", dependencies: ["Notify", "Values", "LoopClock", "TestHarness"],
            path: "Tests/NotifyTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "MQTTTests",
            dependencies: [
                "MQTTService", "MQTTClient", "MQTTMirror", "MQTTWillProbe", "StateFile", "TestHarness", "EventLoop", "LoopClock",
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/MQTTTests", swiftSettings: swiftSettings),
        // Child process the MQTT tests SIGKILL to see the Last Will.
        .executableTarget(
            name: "MQTTWillProbe",
            dependencies: ["MQTTService", "MQTTClient", "MQTTMirror", "StateFile", .product(name: "Logging", package: "swift-log")],
            path: "Tests/MQTTWillProbe", swiftSettings: swiftSettings),
        .testTarget(
            name: "StateFileTests",
            dependencies: [
                "StateFile", "StateFileProbe", "BluetoothSMP", "BluetoothCore", "BluetoothHost", "Gateway", "MQTTService", "MQTTMirror",
                "TestHarness",
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/StateFileTests", swiftSettings: swiftSettings),
        // Child process the state-file tests SIGKILL while it rewrites a state file through its
        // real writer (bonds, the outbox, the BTHome counter, the static address, the discovery
        // record).
        .executableTarget(
            name: "StateFileProbe",
            dependencies: [
                "StateFile", "BluetoothSMP", "BluetoothCore", "BluetoothHost", "Gateway", "MQTTService", "MQTTMirror",
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/StateFileProbe", swiftSettings: swiftSettings),
        .testTarget(
            name: "YAMLTests", dependencies: ["YAML", "ConfigReading"],
            path: "Tests/YAMLTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "ConfigTests",
            dependencies: [
                "Config", "ConfigReading", "BluetoothCore", "BluetoothHCI", "MQTTMirror", "Values", "Notify", "Sensors", "TestHarness"
            ],
            path: "Tests/ConfigTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "EventLoop", "LoopClock", "Gateway", "gattway", "Config", "GPIO", "Sensors", "Values", "Notify", "BluetoothHost",
                "BluetoothATT", "BluetoothGATT", "BluetoothCore", "BluetoothSMP", "MQTTMirror", "MQTTClient", "MQTTService", "StateFile",
                "TestHarness", "DevelopmentHarness",
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/GatewayTests", swiftSettings: swiftSettings),
        // gattway's executable end to end: a configuration, `gattway run`, Bumble phones (Tests/harness).
        .testTarget(
            name: "EndToEndTests", dependencies: ["gattway", "Gateway", "Config", "TestHarness", "BluetoothCore", "MQTTMirror"],
            path: "Tests/EndToEndTests", swiftSettings: swiftSettings)
    ]
)
