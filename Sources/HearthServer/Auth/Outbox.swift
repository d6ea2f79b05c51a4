import HearthCore
import HearthAuth
public import Logging
public import Foundation

/// Where emails go when no mail server is configured: one JSON file per message under
/// `<data-dir>/outbox/` (written atomically) and a log line. In emulator mode the line carries
/// the link, as the Auth emulator prints it; in production only the file name.
public struct Outbox: Sendable {
    public let directory: URL
    let logger: Logger

    public init(directory: URL, logger: Logger) {
        self.directory = directory
        self.logger = logger
    }

    func deliver(_ code: OOBCode, link: String, emulator: Bool) {
        let message = JSON.object([
            ("to", .string(code.email)), ("requestType", .string(code.requestType.rawValue)), ("oobCode", .string(code.code)),
            ("oobLink", .string(link)), ("createdAt", .number(String(code.createdAt))),
        ])
        let name = "\(code.createdAt)-\(code.requestType.mode)-\(code.code.prefix(8)).json"
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let tmp = directory.appendingPathComponent(".\(name).tmp")
            try Data(message.serializedBytes()).write(to: tmp)
            guard rename(tmp.path, directory.appendingPathComponent(name).path) == 0 else {
                throw HearthError(.internal, "rename failed: errno \(errno)")
            }
            var metadata: Logger.Metadata = ["to": "\(code.email)", "type": "\(code.requestType.rawValue)", "file": "\(name)"]
            if emulator { metadata["link"] = "\(link)" }
            logger.notice("email queued in the outbox", metadata: metadata)
        } catch {
            logger.error("cannot write to the outbox", metadata: ["path": "\(directory.path)", "error": "\(error)"])
        }
    }
}
