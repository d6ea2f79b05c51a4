import Foundation
public import HearthClientCore
import HearthClientAuth

/// Cloud Storage for Firebase's client: references into one bucket, reached through Hearth's
/// storage port (the v0 REST protocol the Firebase SDKs speak).
public final class Storage: Sendable {
    public let app: HearthApp
    public let bucket: String
    let base: String
    let timeout: Duration

    /// The default app's default bucket (`<project>.appspot.com` unless the options name one).
    public static func storage() -> Storage { storage(app: HearthApp.requireDefault(for: "Storage")) }

    public static func storage(app: HearthApp) -> Storage {
        app.component(Storage.self) { Storage(app: app, bucket: app.options.storageBucket ?? "\(app.options.projectID).appspot.com") }
    }

    /// A bucket by URL: `gs://bucket`.
    public static func storage(url: String) -> Storage { storage(app: HearthApp.requireDefault(for: "Storage"), url: url) }

    public static func storage(app: HearthApp, url: String) -> Storage {
        let bucket = url.hasPrefix("gs://") ? String(url.dropFirst(5).split(separator: "/").first ?? "") : url
        return Storage(app: app, bucket: bucket)
    }

    init(app: HearthApp, bucket: String) {
        self.app = app
        self.bucket = bucket
        base = app.options.baseURL(port: app.options.storagePort)
        timeout = app.options.requestTimeout
    }

    public func reference() -> StorageReference { StorageReference(storage: self, path: "") }

    public func reference(withPath path: String) -> StorageReference { StorageReference(storage: self, path: StorageReference.normalize(path)) }

    /// `gs://bucket/path` or an `http(s)://…/v0/b/<bucket>/o/<path>` download URL.
    public func reference(forURL url: String) -> StorageReference {
        if url.hasPrefix("gs://") {
            let rest = url.dropFirst(5)
            let path = rest.split(separator: "/", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            return reference(withPath: path)
        }
        if let range = url.range(of: "/o/") {
            let encoded = url[range.upperBound...].split(separator: "?").first.map(String.init) ?? ""
            return reference(withPath: encoded.removingPercentEncoding ?? encoded)
        }
        return reference(withPath: url)
    }

    /// `Authorization: Firebase <ID token>` when a user is signed in.
    func headers() async throws -> [String: String] {
        guard let user = Auth.auth(app: app).currentUser else { return [:] }
        return ["Authorization": "Firebase \(try await user.getIDToken())"]
    }
}
