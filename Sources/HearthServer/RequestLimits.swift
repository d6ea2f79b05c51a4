/// How large a request each port accepts (`--max-request-bytes`, `--max-object-bytes`;
/// docs/production.md, "Request-size limits"). Every responder takes its limit from here, so
/// one setting governs each service.
public struct RequestLimits: Sendable, Equatable {
    /// The services whose request bodies (other than object uploads) are bounded.
    public enum Service: String, CaseIterable, Sendable {
        case firestore, auth, database, storage, s3, api, console
    }

    /// `--max-request-bytes`: one limit for the non-upload request bodies of every port, and the
    /// Firestore port's gRPC messages; nil keeps each service's default (``defaultRequestBytes``).
    public var requestBytes: Int?
    /// `--max-object-bytes`: the largest object a Storage or S3 upload (a single PUT, a POST form,
    /// a resumable or multipart upload, an S3 part) may make.
    public var objectBytes: Int64 = Self.defaultObjectBytes

    public init(requestBytes: Int? = nil, objectBytes: Int64 = Self.defaultObjectBytes) {
        self.requestBytes = requestBytes
        self.objectBytes = objectBytes
    }

    /// The limit in force for a service's request bodies (gRPC: each message).
    public func requestBytes(_ service: Service) -> Int { requestBytes ?? Self.defaultRequestBytes[service]! }

    /// Each service's default, after Google's limits where Google has one:
    /// - Firestore: a request is at most 10 MiB (as protobuf); its REST JSON is larger for the
    ///   same request, so REST bodies and gRPC messages get 11 MiB.
    /// - Realtime Database: a REST write is at most 256 MB (the SDKs' WebSocket messages 16 MB,
    ///   ``DatabaseWebSocketFrames/maxMessageBytes``, are not changed by this setting).
    /// - Auth (Identity Toolkit): 4 MiB, room for an `accounts:batchCreate` of 1000 users.
    /// - Storage and S3 non-upload bodies (metadata JSON, XML documents): 1 MiB and 2 MiB.
    /// - The api port and the console: small JSON documents, 64 KiB and 1 MiB (rules sources).
    public static let defaultRequestBytes: [Service: Int] = [
        .firestore: 11 << 20, .auth: 4 << 20, .database: 256 << 20, .storage: 1 << 20, .s3: 2 << 20, .api: 64 << 10, .console: 1 << 20,
    ]

    /// S3's largest single PUT is 5 GiB; the same bound serves every upload kind and Storage,
    /// so an object either store accepts can be copied to the other.
    public static let defaultObjectBytes: Int64 = 5 << 30

    /// The accepted range of `--max-request-bytes`: 1 KiB to 1 GiB.
    public static let requestBytesRange = 1024...(1 << 30)
    /// The accepted range of `--max-object-bytes`: 1 byte to 5 TiB (S3's largest object).
    public static let objectBytesRange: ClosedRange<Int64> = 1...(5 << 40)
}
