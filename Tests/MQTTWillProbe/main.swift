// A tiny gattway MQTT mirror process for the Last Will test: it connects, announces itself
// `online`, and waits to be killed. Usage: MQTTWillProbe <port> <state directory>
import Foundation
import Logging
import MQTTClient
import MQTTMirror
import MQTTService
import StateFile

let arguments = CommandLine.arguments
guard arguments.count == 3, let port = Int(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: MQTTWillProbe <port> <state directory>\n".utf8))
    exit(2)
}
let service = try MQTTMirrorService(
    client: MQTTClientConfiguration(host: "127.0.0.1", port: port, clientID: "will-probe", keepalive: .seconds(5)),
    mirror: MirrorConfiguration(deviceID: "probe", characteristics: [], discoveryPrefix: nil, softwareVersion: "1"),
    stateDirectory: URL(fileURLWithPath: arguments[2]), stateWriter: StateFileWriter(),
    logger: Logger(label: "will-probe"),
    onSet: { _, _ in .rejected(reason: "read-only") }, onSourceValue: { _, _ in })
await service.run()
