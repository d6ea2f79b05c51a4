public import Foundation
#if canImport(Security)
import Security
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the signed-in user is kept between launches. The default is the Keychain on Apple
/// platforms and a 0600 file on Linux; an app may supply its own.
public protocol AuthUserStore: Sendable {
    func load(key: String) throws -> Data?
    func save(_ data: Data, key: String) throws
    func remove(key: String) throws
}

/// One file per key in `directory`, created 0600 (the directory 0700), replaced atomically.
public struct FileAuthUserStore: AuthUserStore {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    /// `$HEARTH_CLIENT_DATA_DIR`, else `$XDG_DATA_HOME/hearth-client`, else `~/.local/share/hearth-client`.
    public static func defaultDirectory() -> URL {
        let env = ProcessInfo.processInfo.environment
        if let dir = env["HEARTH_CLIENT_DATA_DIR"], !dir.isEmpty { return URL(fileURLWithPath: dir) }
        let base = env["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        return base.appendingPathComponent("hearth-client")
    }

    func url(_ key: String) -> URL {
        let safe = String(key.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0) ? Character($0) : "_" })
        return directory.appendingPathComponent(safe + ".json")
    }

    public func load(key: String) throws -> Data? {
        let path = url(key).path
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try Data(contentsOf: url(key))
    }

    public func save(_ data: Data, key: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let target = url(key)
        let temporary = directory.appendingPathComponent(".\(UUID().uuidString).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AuthErrorCode.keychainError.error(serverMessage: "cannot create \(temporary.path) (errno \(errno))") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == data.count, synced == 0, rename(temporary.path, target.path) == 0 else {
            unlink(temporary.path)
            throw AuthErrorCode.keychainError.error(serverMessage: "cannot write \(target.path)")
        }
    }

    public func remove(key: String) throws {
        let path = url(key).path
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
    }
}

#if canImport(Security)
/// The Keychain, as the Apple SDK keeps the user: a generic password per app.
public struct KeychainAuthUserStore: AuthUserStore {
    public let service: String
    public let accessGroup: String?

    public init(service: String, accessGroup: String? = nil) {
        self.service = service
        self.accessGroup = accessGroup
    }

    func query(_ key: String) -> [String: Any] {
        var q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: key]
        if let accessGroup { q[kSecAttrAccessGroup as String] = accessGroup }
        return q
    }

    public func load(key: String) throws -> Data? {
        var q = query(key)
        q[kSecReturnData as String] = true
        q[kSecMatchLimit as String] = kSecMatchLimitOne
        var out: CFTypeRef?
        let status = SecItemCopyMatching(q as CFDictionary, &out)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw AuthErrorCode.keychainError.error(serverMessage: "SecItemCopyMatching \(status)") }
        return out as? Data
    }

    public func save(_ data: Data, key: String) throws {
        let status = SecItemUpdate(query(key) as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        if status == errSecItemNotFound {
            var q = query(key)
            q[kSecValueData as String] = data
            q[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let added = SecItemAdd(q as CFDictionary, nil)
            guard added == errSecSuccess else { throw AuthErrorCode.keychainError.error(serverMessage: "SecItemAdd \(added)") }
        } else if status != errSecSuccess {
            throw AuthErrorCode.keychainError.error(serverMessage: "SecItemUpdate \(status)")
        }
    }

    public func remove(key: String) throws {
        let status = SecItemDelete(query(key) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else {
            throw AuthErrorCode.keychainError.error(serverMessage: "SecItemDelete \(status)")
        }
    }
}
#endif
