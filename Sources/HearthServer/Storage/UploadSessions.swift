import HearthCore
import HearthStorage
import Foundation
import Synchronization

/// Resumable uploads in progress (Firebase's `X-Goog-Upload-Protocol: resumable`): each
/// holds an open blob writer, so a client that lost its connection resumes at the offset the
/// server reports. Sessions live in memory and expire after a week unused; a finished
/// session remembers its object so a repeated `finalize` answers the same.
final class UploadSessions: Sendable {
    final class Session: Sendable {
        let id: String
        let bucket: String
        let name: String
        let attributes: ObjectAttributes
        let declaredSize: Int64?
        let identity: Identity
        let writer: any BlobWriter
        let preconditions: ObjectPreconditions
        /// Checksums the client declared (GCS), checked when the upload completes.
        let md5: String?
        let crc32c: String?
        let state: Mutex<State>

        enum State {
            case active(lastUsed: Date)
            case finished(StorageObject)
            case cancelled
        }

        init(id: String, bucket: String, name: String, attributes: ObjectAttributes, declaredSize: Int64?, identity: Identity,
             writer: any BlobWriter, preconditions: ObjectPreconditions = .none, md5: String? = nil, crc32c: String? = nil) {
            self.preconditions = preconditions
            self.md5 = md5
            self.crc32c = crc32c
            self.id = id
            self.bucket = bucket
            self.name = name
            self.attributes = attributes
            self.declaredSize = declaredSize
            self.identity = identity
            self.writer = writer
            state = Mutex(.active(lastUsed: Date()))
        }
    }

    let sessions = Mutex<[String: Session]>([:])
    static let lifetime: TimeInterval = 7 * 24 * 3600

    func add(_ s: Session) {
        sessions.withLock { all in
            let now = Date()
            all = all.filter { _, s in
                if case .active(let t) = s.state.withLock({ $0 }), now.timeIntervalSince(t) > Self.lifetime {
                    s.writer.abort()
                    return false
                }
                return true
            }
            all[s.id] = s
        }
    }

    func session(_ id: String) -> Session? { sessions.withLock { $0[id] } }
}
