import Foundation
import Synchronization
import Testing

import HearthClientAuth
import HearthClientCore
@testable import HearthClientStorage

/// The Storage client against a live Hearth storage port, with Drift-style path rules.
@Suite(.serialized) struct StorageClientTests {
    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{uid}/{rest=**} {
              allow read, write: if request.auth != null && request.auth.uid == uid;
            }
          }
        }
        """

    func withStorage(_ body: @Sendable @escaping (Storage, Auth) async throws -> Void) async throws {
        try await LiveServer.with(configure: { config, dir in
            let file = dir.appendingPathComponent("storage.rules")
            try Self.rules.write(to: file, atomically: true, encoding: .utf8)
            config.storageRulesFile = file.path
        }) { ports in
            var options = HearthOptions(projectID: "demo-hearth")
            options.authPort = ports["auth"]!
            options.storagePort = ports["storage"]!
            let name = "storage-\(UUID().uuidString)"
            HearthApp.configure(name: name, options: options)
            let app = HearthApp.app(name: name)!
            let auth = Auth.auth(app: app, userStore: FileAuthUserStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)))
            try await body(Storage.storage(app: app), auth)
        }
    }

    func code(_ error: any Error) -> StorageErrorCode? {
        let e = error as NSError
        return e.domain == StorageErrorDomain ? StorageErrorCode(rawValue: e.code) : nil
    }

    @Test func referencesNavigateLikeFirebases() throws {
        var options = HearthOptions(projectID: "demo-refs")
        options.storagePort = 1
        let name = "refs-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: options)
        let storage = Storage.storage(app: HearthApp.app(name: name)!)
        let ref = storage.reference(withPath: "/bottles//b1/content/")
        #expect(ref.fullPath == "bottles/b1/content")
        #expect(ref.name == "content")
        #expect(ref.bucket == "demo-refs.appspot.com")
        #expect(ref.child("message_image.jpg").fullPath == "bottles/b1/content/message_image.jpg")
        #expect(ref.parent()?.fullPath == "bottles/b1")
        #expect(ref.root().fullPath == "")
        #expect(ref.root().parent() == nil)
        #expect(storage.reference(forURL: "gs://demo-refs.appspot.com/a/b c.png").fullPath == "a/b c.png")
        #expect(storage.reference(forURL: "http://h:1/v0/b/x/o/a%2Fb%20c.png?alt=media").fullPath == "a/b c.png")
        #expect(ref.child("a b").objectURL.hasSuffix("/v0/b/demo-refs.appspot.com/o/bottles%2Fb1%2Fcontent%2Fa%20b"))
    }

    @Test func uploadsDownloadsMetadataListingAndDeletion() async throws {
        try await withStorage { storage, auth in
            let uid = try await auth.signInAnonymously().user.uid
            let home = storage.reference().child("users/\(uid)")
            // small: one multipart request
            let avatar = home.child("avatar.png")
            let meta = StorageMetadata()
            meta.contentType = "image/png"
            meta.customMetadata = ["by": "test", "keep": "yes"]
            let small = Data((0..<2048).map { UInt8($0 % 251) })
            let uploaded = try await avatar.putData(small, metadata: meta)
            #expect(uploaded.size == 2048)
            #expect(uploaded.contentType == "image/png")
            #expect(uploaded.path == "users/\(uid)/avatar.png")
            #expect(try await avatar.data(maxSize: 1 << 20) == small)
            // large: a resumable session in chunks, progress reported
            let big = Data((0..<(2_621_440)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let seen = Mutex<[Int64]>([])
            let audio = home.child("bottles/b1/whisper.m4a")
            let bigMeta = try await audio.putDataAsync(big, metadata: nil) { p in
                if let p { seen.withLock { $0.append(p.completedUnitCount) } }
            }
            #expect(bigMeta.size == Int64(big.count))
            #expect(seen.withLock { $0 } == [0, 1_048_576, 2_097_152, 2_621_440])
            #expect(try await audio.data(maxSize: 10 << 20) == big)
            // too large for maxSize
            do {
                _ = try await audio.data(maxSize: 1000)
                Issue.record("maxSize was not enforced")
            } catch {
                #expect(code(error) == .downloadSizeExceeded)
            }
            // a download URL works without credentials
            let url = try await avatar.downloadURL()
            #expect(url.absoluteString.contains("token="))
            let fetched = try await ClientHTTP.shared.send("GET", url.absoluteString)
            #expect(fetched.status == 200 && fetched.body == small)
            let forged = try await ClientHTTP.shared.send("GET", url.absoluteString.replacingOccurrences(of: "token=", with: "token=x"))
            #expect(fetched.status == 200 && forged.status == 403)
            // metadata changes: one key added, one removed
            let current = try await avatar.getMetadata()
            current.customMetadata = ["by": "test", "added": "1"]
            let updated = try await avatar.updateMetadata(current)
            #expect(updated.customMetadata == ["by": "test", "added": "1"])
            // listing
            let page = try await home.listAll()
            #expect(page.items.map(\.name) == ["avatar.png"])
            #expect(page.prefixes.map(\.fullPath) == ["users/\(uid)/bottles"])
            let first = try await home.list(maxResults: 1)
            #expect(first.items.count + first.prefixes.count >= 1)
            await #expect(throws: (any Error).self) { _ = try await home.list(maxResults: 0) }
            // a file round trip
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).jpg")
            try small.write(to: file)
            let fromFile = try await home.child("photo.jpg").putFile(from: file)
            #expect(fromFile.contentType == "image/jpeg")
            let out = try await home.child("photo.jpg").write(toFile: file.appendingPathExtension("out"))
            #expect(try Data(contentsOf: out) == small)
            // deletion
            try await avatar.delete()
            do {
                _ = try await avatar.getMetadata()
                Issue.record("a deleted object still has metadata")
            } catch {
                #expect(code(error) == .objectNotFound)
            }
        }
    }

    @Test func rulesDecideAndTheirDenialsHaveFirebasesCodes() async throws {
        try await withStorage { storage, auth in
            let stranger = storage.reference(withPath: "users/someone-else/avatar.png")
            do {
                try await stranger.putData(Data("x".utf8))
                Issue.record("an unauthenticated upload was allowed")
            } catch {
                #expect([.unauthenticated, .unauthorized].contains(code(error)))
            }
            _ = try await auth.signInAnonymously()
            do {
                try await stranger.putData(Data("x".utf8))
                Issue.record("an upload to another user's folder was allowed")
            } catch {
                #expect(code(error) == .unauthorized)
                #expect((error as NSError).localizedDescription == "User does not have permission to access gs://demo-hearth.appspot.com/users/someone-else/avatar.png.")
            }
        }
    }

    @Test func uploadTasksReportProgressAndOutcome() async throws {
        try await withStorage { storage, auth in
            let uid = try await auth.signInAnonymously().user.uid
            let ref = storage.reference(withPath: "users/\(uid)/task.bin")
            let done = Mutex<(StorageMetadata?, String?)>((nil, nil))
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let task = ref.putData(Data(count: 1_500_000), metadata: nil) { meta, error in
                    done.withLock { $0 = (meta, error.map { "\($0)" }) }
                    c.resume()
                }
                task.observe(.progress) { _ in }
            }
            #expect(done.withLock { $0.0?.size } == 1_500_000)
            #expect(done.withLock { $0.1 } == nil)
        }
    }
}
