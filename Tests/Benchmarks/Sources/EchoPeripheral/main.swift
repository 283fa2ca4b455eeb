import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothHost
import Foundation
import Logging
import StateFile

// gattway's host and GATT server as an echo peripheral: every value written to the echo
// characteristic (Write Request or Write Command) is notified back to the subscribed centrals.
//   EchoPeripheral tcp:127.0.0.1:PORT NAME
// Prints "ready" on stdout once the host is powered on and the service is published.

let arguments = CommandLine.arguments
guard arguments.count == 3, let transport = try? HCITransportSpec(parsing: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: EchoPeripheral tcp:HOST:PORT NAME\n".utf8))
    exit(2)
}
let name = arguments[2]
let serviceUUID = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
let echoUUID = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!

var logger = Logger(label: "echo-peripheral", factory: { StreamLogHandler.standardError(label: $0) })
logger.logLevel = .warning
let binding = GATTPeripheralBinding(configuration: GATTServer.Configuration(deviceName: name))
let host = PeripheralHost(
    configuration: HostConfiguration(
        transport: transport,
        stateDirectory: NSTemporaryDirectory() + "gattway-roundtrip-\(UUID().uuidString)",
        advertising: AdvertisingSettings(localName: name, serviceUUIDs: [serviceUUID], intervalMilliseconds: 20)),
    peripheral: binding, stateWriter: StateFileWriter(), logger: logger)
let peripheral = binding.peripheral

// The write handler is synchronous and must not block: it hands each value to the echo task.
let (writes, writeSink) = AsyncStream.makeStream(of: [UInt8].self)
await peripheral.setRequestHandlers(
    GATTRequestHandlers(
        read: { _ in .success([]) },
        write: { batch in
            for request in batch { writeSink.yield(request.value) }
            return nil
        }))

// The peripheral's events, as its sink hands them over on the loop, for the waits below.
let (events, eventSink) = AsyncStream.makeStream(of: PeripheralEvent.self)
await peripheral.setEventSink { eventSink.yield($0) }
let hostTask = Task { await host.run() }
_ = await events.first { $0 == .stateChanged(.poweredOn) }
let published = try await peripheral.add(
    GATTService(
        uuid: serviceUUID,
        characteristics: [
            GATTCharacteristic(
                uuid: echoUUID, properties: [.read, .write, .writeWithoutResponse, .notify],
                permissions: [.readable, .writeable], value: .dynamic)
        ]))
let echo = published.characteristic(echoUUID)!
FileHandle.standardOutput.write(Data("ready\n".utf8))  // unbuffered: the runner waits for it

// Round trips are sequential, so the transmit queue is never full; if it ever is, the value is
// retried once room frees (readyToUpdateSubscribers) rather than dropped.
try await echoWrites(writes, on: peripheral, characteristic: echo, events: events)
hostTask.cancel()

/// Notifies each written value back. Isolated to the peripheral, an actor on gattway's event loop,
/// as the gateway's pipeline is: a value is taken on the loop where the write arrived and sent
/// from there, with no hop to another thread (top-level code would run on the main actor).
func echoWrites(
    _ writes: AsyncStream<[UInt8]>, on peripheral: isolated Peripheral,
    characteristic: PublishedCharacteristic, events: AsyncStream<PeripheralEvent>
) async throws {
    for await value in writes {
        while try !peripheral.updateValue(value, for: characteristic) {
            _ = await events.first { $0 == .readyToUpdateSubscribers }
        }
    }
}
