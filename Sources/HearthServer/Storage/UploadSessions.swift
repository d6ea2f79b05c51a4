import HearthCore
import HearthStorage
import Foundation

/// What a resumable upload session must remember besides its bytes, kept as the session's
/// descriptor in the metadata store (``ObjectStore/UploadSession``), so that whichever server
/// takes the next chunk — another replica, or this one after a restart — finishes the upload
/// exactly as the one that opened it would have: the metadata, the uploader the rules judge,
/// the declared size, and the preconditions and checksums of a GCS upload.
struct UploadDescriptor {
    var attributes: ObjectAttributes
    var declaredSize: Int64?
    var identity: Identity
    var preconditions: ObjectPreconditions = .none
    /// Checksums the client declared (GCS), checked when the upload completes.
    var md5: String?
    var crc32c: String?

    func encoded() -> String {
        var members: [(String, JSON)] = [("attributes", StoredObjectFields.attributesJSON(attributes))]
        func put(_ key: String, _ value: String?) { if let value { members.append((key, .string(value))) } }
        func put(_ key: String, _ value: Int64?) { if let value { members.append((key, .string(String(value)))) } }
        if let tokens = attributes.downloadTokens { members.append(("downloadTokens", .array(tokens.map { .string($0) }))) }
        put("declaredSize", declaredSize)
        let kind: String = switch identity.kind {
        case .admin: "admin"
        case .user: "user"
        case .unauthenticated: "unauthenticated"
        }
        var who: [(String, JSON)] = [("kind", .string(kind))]
        if let uid = identity.uid { who.append(("uid", .string(uid))) }
        if let claims = identity.claims { who.append(("claims", claims)) }
        if let provider = identity.signInProvider { who.append(("signInProvider", .string(provider))) }
        if let principal = identity.principal { who.append(("principal", .string(principal))) }
        members.append(("identity", .object(who)))
        put("ifGenerationMatch", preconditions.ifGenerationMatch)
        put("ifGenerationNotMatch", preconditions.ifGenerationNotMatch)
        put("ifMetagenerationMatch", preconditions.ifMetagenerationMatch)
        put("ifMetagenerationNotMatch", preconditions.ifMetagenerationNotMatch)
        put("md5Hash", md5)
        put("crc32c", crc32c)
        return JSON.object(members).serialized()
    }

    init(attributes: ObjectAttributes, declaredSize: Int64?, identity: Identity, preconditions: ObjectPreconditions = .none,
         md5: String? = nil, crc32c: String? = nil) {
        self.attributes = attributes
        self.declaredSize = declaredSize
        self.identity = identity
        self.preconditions = preconditions
        self.md5 = md5
        self.crc32c = crc32c
    }

    /// The descriptor ``encoded()`` wrote (a session's row is only ever written by a server).
    init(decoding text: String) throws(HearthError) {
        guard let json = try? JSON.parse(Array(text.utf8)), json.objectValue != nil else {
            throw HearthError(.internal, "The upload session's record is unreadable.")
        }
        func s(_ k: String) -> String? { json[k]?.stringValue }
        func n(_ k: String) -> Int64? { s(k).flatMap { Int64($0) } }
        var attributes = StoredObjectFields.attributes(json["attributes"] ?? .object([]))
        attributes.downloadTokens = json["downloadTokens"]?.arrayValue?.compactMap(\.stringValue)
        let who = json["identity"]
        let kind: Identity.Kind = switch who?["kind"]?.stringValue {
        case "admin": .admin
        case "user": .user
        default: .unauthenticated
        }
        self.init(
            attributes: attributes, declaredSize: n("declaredSize"),
            identity: Identity(
                kind: kind, uid: who?["uid"]?.stringValue, claims: who?["claims"], signInProvider: who?["signInProvider"]?.stringValue,
                principal: who?["principal"]?.stringValue),
            preconditions: ObjectPreconditions(
                ifGenerationMatch: n("ifGenerationMatch"), ifGenerationNotMatch: n("ifGenerationNotMatch"),
                ifMetagenerationMatch: n("ifMetagenerationMatch"), ifMetagenerationNotMatch: n("ifMetagenerationNotMatch")),
            md5: s("md5Hash"), crc32c: s("crc32c"))
    }
}

extension ObjectStore.UploadSession {
    /// The object a finished session answered with.
    var finishedObject: StorageObject? {
        guard case .finished(let record) = state else { return nil }
        return StoredObjectFields.decodeObject(record)
    }
}
