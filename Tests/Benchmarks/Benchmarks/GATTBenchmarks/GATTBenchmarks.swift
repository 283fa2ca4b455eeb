import Benchmark
import BluetoothATT
import BluetoothCore
import BluetoothGATT
import LoopClock

/// Per-operation cost of the GATT server's hot paths, through its public API only.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: .kilo(100))

    for mtu: UInt16 in [23, 517] {
        Benchmark("Read By Type 0x2803, 50-characteristic database, MTU \(mtu)") { benchmark in
            let (server, service) = makeServer(mtu: mtu)
            let request = ATTPDU.readByTypeRequest(
                ATTHandleRange(start: service.handles.lowerBound, end: service.handles.upperBound),
                type: BluetoothUUID(0x2803)
            ).encoded
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                server.receive(request, from: central, now: now)
                blackHole(server.takeOutput())
            }
        }
    }

    Benchmark("Read Request of a dynamic value") { benchmark in
        let (server, service) = makeServer(mtu: 247)
        let request = ATTPDU.readRequest(handle: service.characteristics[25].valueHandle).encoded
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            server.receive(request, from: central, now: now)
            blackHole(server.takeOutput())
        }
    }

    Benchmark("Handle Value Notification encode (20 bytes)") { benchmark in
        let value = [UInt8](repeating: 0x5A, count: 20)
        for _ in benchmark.scaledIterations {
            blackHole(ATTPDU.handleValueNotification(handle: 0x0016, value: value).encoded)
        }
    }

    Benchmark("updateValue to one subscribed central (notification)") { benchmark in
        let (server, service) = makeServer(mtu: 247)
        let characteristic = service.characteristics[0]
        let cccd = characteristic.clientConfigurationHandle!
        server.receive(ATTPDU.writeRequest(handle: cccd, value: [0x01, 0x00]).encoded, from: central, now: now)
        _ = server.takeOutput()
        let value = [UInt8](repeating: 0x5A, count: 20)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            server.addTransmitCredits(1, now: now)
            blackHole(try! server.updateValue(value, for: characteristic, now: now))
            blackHole(server.takeOutput())
        }
    }
}

private let central = CentralID(1)
private let now = LoopInstant(nanoseconds: 1_000_000_000)

/// A server holding one service of 50 readable, notifiable characteristics, one central
/// connected at `mtu`.
private func makeServer(mtu: UInt16) -> (GATTServer, PublishedService) {
    let server = GATTServer(handlers: GATTRequestHandlers(read: { _ in .success([1, 2, 3, 4]) }, write: { _ in nil }))
    let characteristics = (0..<50).map { index in
        GATTCharacteristic(
            uuid: BluetoothUUID(0xA000 + UInt16(index)), properties: [.read, .notify],
            permissions: .readable, value: .dynamic)
    }
    let service = try! server.addService(
        GATTService(uuid: BluetoothUUID(0xA0FF), characteristics: characteristics),
        now: now)
    server.connect(central)
    server.receive(ATTPDU.exchangeMTURequest(clientRxMTU: mtu).encoded, from: central, now: now)
    _ = server.takeOutput()
    return (server, service)
}
