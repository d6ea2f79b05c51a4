import Foundation
import HearthCore
import HearthAuth
import HearthApp
import HearthServer
import Logging
import Synchronization

/// The admin credential of a production server started without one (`--admin-token`,
/// `HEARTH_ADMIN_TOKEN`): `<data-dir>/admin-token`, made on the first start (0600) and read on
/// every later one; on that first start also a service-account key, `<data-dir>/service-account.json`,
/// once the auth port is bound (its `token_uri` names it). Paths are printed, never the secrets.
struct FirstRunCredential {
    static let tokenFileName = "admin-token"
    static let keyFileName = "service-account.json"

    let dataDirectory: URL
    var tokenFile: URL { dataDirectory.appendingPathComponent(Self.tokenFileName) }
    var keyFile: URL { dataDirectory.appendingPathComponent(Self.keyFileName) }

    /// The token kept in the data directory, made now when there is none; `created` on the first start.
    /// Several servers may start at once on one data directory (replicas sharing it, docs/postgres.md):
    /// the file is published whole (``publish(_:to:)``), so exactly one of them makes the token and
    /// the others read that one — none fails, none reads a half-written file.
    func adminToken() throws -> (token: String, created: Bool) {
        if let token = try storedToken() { return (token, false) }
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        var bytes = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = generator.next() }
        let token = "hearth_" + Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        if try publish(token + "\n", to: tokenFile) { return (token, true) }
        // Another server published its token first: that one is everyone's.
        guard let theirs = try storedToken() else {
            throw HearthError(.failedPrecondition, "Cannot read \(tokenFile.path) after another server made it.")
        }
        return (theirs, false)
    }

    /// The token in ``tokenFile``, nil when there is no file.
    func storedToken() throws -> String? {
        guard let data = FileManager.default.contents(atPath: tokenFile.path) else { return nil }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.count >= 16 else {
            throw HearthError(.failedPrecondition, "\(tokenFile.path) holds no admin token (at least 16 characters); delete it to have a new one made.")
        }
        return token
    }

    /// Publishes `text` as `url` (0600) only if no file is there: written whole and fsynced under a
    /// temporary name of this process's own, then hard-linked to `url` — `link(2)` fails if `url`
    /// exists, so a credential another process made is never replaced, and a reader sees the
    /// whole file or none. Returns false when `url` already existed.
    func publish(_ text: String, to url: URL) throws -> Bool {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        // O_EXCL: a name of our own, never another process's file.
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw HearthError(.failedPrecondition, "Cannot create \(temporary.path): errno \(errno)") }
        defer { unlink(temporary.path) }
        do {
            defer { close(fd) }
            do {
                try FileHandle(fileDescriptor: fd, closeOnDealloc: false).write(contentsOf: Data(text.utf8))
            } catch {
                throw HearthError(.failedPrecondition, "Cannot write \(temporary.path): \(error)")
            }
            guard fsync(fd) == 0 else { throw HearthError(.failedPrecondition, "Cannot write \(temporary.path): errno \(errno)") }
        }
        guard link(temporary.path, url.path) == 0 else {
            if errno == EEXIST { return false }
            throw HearthError(.failedPrecondition, "Cannot create \(url.path): errno \(errno)")
        }
        return true
    }

    /// The service-account key for Google's libraries, registered on the first start before the
    /// server opens (so it signs custom tokens at once), written once the auth port is bound:
    /// its `token_uri` names that port.
    static func createServiceAccount(_ configuration: ServerConfiguration, stores: Stores) async throws -> CreatedServiceAccount {
        let auth = try await CompositionRoot.openAuth(configuration, stores: stores)
        return try await auth.createServiceAccount(tokenURI: "\(configuration.scheme)://127.0.0.1:9099/token")
    }

    /// Once every port is bound: writes the service-account key (its `token_uri` naming the auth
    /// port) and prints the banner.
    func announce(configuration: ServerConfiguration, ports bound: [String: Int], account: CreatedServiceAccount?, logger: Logger) {
        let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1" : configuration.host
        let tokenURI = "\(configuration.scheme)://\(host.contains(":") ? "[\(host)]" : host):\(bound["auth"] ?? 9099)/token"
        var keyWritten = false
        if let account {
            do {
                try writeServiceAccountKey(account, tokenURI: tokenURI)
                keyWritten = true
            } catch {
                logger.error("could not write the first service-account key", metadata: ["error": "\(error)"])
            }
        }
        FileHandle.standardOutput.write(Data((banner(configuration: configuration, ports: bound, keyWritten: keyWritten) + "\n").utf8))
    }

    func writeServiceAccountKey(_ created: CreatedServiceAccount, tokenURI: String) throws {
        guard !FileManager.default.fileExists(atPath: keyFile.path) else { return }
        var file = created.keyFile
        if case .object(let fields) = file {
            file = .object(fields.map { $0.0 == "token_uri" ? ($0.0, .string(tokenURI)) : $0 })
        }
        // Another server of this data directory may have written its key meanwhile: that one stays.
        _ = try publish(file.serialized() + "\n", to: keyFile)
    }

    /// What the first start prints: where the credential is, and a command that uses it.
    func banner(configuration: ServerConfiguration, ports: [String: Int], keyWritten: Bool) -> String {
        let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1" : configuration.host
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let firestore = ports["firestore"] ?? 8080
        let cacert = configuration.tls == nil ? "" : " --cacert <your CA file>"
        var lines = [
            "",
            "Hearth made an admin credential on this first start (files readable only by you):",
            "  admin token:          \(tokenFile.path)",
        ]
        if keyWritten {
            lines.append("  service-account key:  \(keyFile.path)   (GOOGLE_APPLICATION_CREDENTIALS for google-cloud-* and firebase-admin)")
        }
        lines += [
            "Try it:",
            "  curl\(cacert) -H \"Authorization: Bearer $(cat \(tokenFile.path))\" \\",
            "    '\(configuration.scheme)://\(hostPart):\(firestore)/v1/projects/\(configuration.project)/databases/(default)/documents/users?documentId=alice' \\",
            "    -d '{\"fields\":{\"name\":{\"stringValue\":\"Alice\"}}}'",
            "Later starts reuse these files; --admin-token (or HEARTH_ADMIN_TOKEN) takes the token's place.",
            "",
        ]
        return lines.joined(separator: "\n")
    }
}

/// The service account the first start made, from before the engines open until the ports are bound.
final class MadeServiceAccount: Sendable {
    let value = Mutex<CreatedServiceAccount?>(nil)
}
