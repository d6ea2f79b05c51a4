public import HearthCore
public import HearthFiles
public import Foundation

/// The api port's settings (`--api-config FILE`, or firebase.json's `hearth.api` object):
///
/// ```json
/// {"bucket": "uploads", "maxUploadBytes": 10485760, "presignExpiresSeconds": 300,
///  "strictUploads": false, "pendingTimeoutSeconds": 3600, "sweepIntervalSeconds": 60,
///  "contentTypes": {"image/jpeg": ["jpg", "jpeg"], "image/png": ["png"]},
///  "s3PublicURL": "https://s3.example.com", "s3Region": "us-east-1"}
/// ```
///
/// Presigned URLs are signed with an S3 access key of this server: `HEARTH_API_S3_ACCESS_KEY_ID`
/// and `HEARTH_API_S3_SECRET_ACCESS_KEY` from the environment, else one the server creates for
/// itself (limited to the registry's bucket). Never with anything from a client.
public struct APIConfiguration: Sendable {
    /// The bucket uploads go to; nil = the project's default bucket.
    public var bucket: String?
    public var policy: FileUploadPolicy = .init()
    /// The address clients reach the S3 port at; nil = `http://<host>:<s3 port>`.
    public var s3PublicURL: URL?
    public var s3Region: String = "us-east-1"
    public var s3AccessKeyID: String?
    public var s3SecretAccessKey: String?
    /// An external S3 bucket the registry's objects live in (`externalS3`: `endpoint`, path-style,
    /// and `bucket`): presigned URLs point at it and `complete` checks objects there. Signed
    /// with `HEARTH_API_S3_ACCESS_KEY_ID`/`HEARTH_API_S3_SECRET_ACCESS_KEY` (required then).
    public var externalS3: (endpoint: URL, bucket: String)?
    /// How often unfinished uploads are looked for.
    public var sweepIntervalSeconds: Int = 60
    /// App Check: the project number in tokens (nil = derived from the project id).
    public var appCheckProjectNumber: String?
    /// Lifetime of issued App Check tokens.
    public var appCheckTokenTTLSeconds: Int64 = 3600
    /// App Check enforcement per service: `api`, `firestore` (REST header and gRPC metadata), `storage` (Firebase Storage v0).
    public var appCheckEnforcement: [String: AppCheckMode] = [:]

    public init() {}

    /// Reads a configuration file; every field is optional.
    public static func load(_ path: String) throws -> APIConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HearthError(.failedPrecondition, "Cannot read api config \(path).")
        }
        return try parse(JSON.parse(Array(data)), source: path)
    }

    public static func parse(_ json: JSON, source: String) throws -> APIConfiguration {
        guard let members = json.objectValue else { throw HearthError.invalidArgument("\(source): expected a JSON object.") }
        var out = APIConfiguration()
        func integer(_ key: String, _ value: JSON, _ range: ClosedRange<Int64>) throws -> Int64 {
            guard case .number(let text) = value, let number = Int64(text), range.contains(number) else {
                throw HearthError.invalidArgument("\(source): \(key) must be an integer in \(range.lowerBound)...\(range.upperBound).")
            }
            return number
        }
        func string(_ key: String, _ value: JSON) throws -> String {
            guard let text = value.stringValue, !text.isEmpty else { throw HearthError.invalidArgument("\(source): \(key) must be a non-empty string.") }
            return text
        }
        for (key, value) in members {
            switch key {
            case "bucket": out.bucket = try string(key, value)
            case "maxUploadBytes": out.policy.maxUploadBytes = try integer(key, value, 0...(5 << 40))
            case "presignExpiresSeconds": out.policy.presignExpiresSeconds = Int(try integer(key, value, 1...604_800))
            case "pendingTimeoutSeconds": out.policy.pendingTimeoutSeconds = Int(try integer(key, value, 1...(365 * 86400)))
            case "sweepIntervalSeconds": out.sweepIntervalSeconds = Int(try integer(key, value, 1...86400))
            case "strictUploads":
                guard let flag = value.boolValue else { throw HearthError.invalidArgument("\(source): strictUploads must be true or false.") }
                out.policy.strictUploads = flag
            case "contentTypes":
                guard let types = value.objectValue, !types.isEmpty else {
                    throw HearthError.invalidArgument("\(source): contentTypes must map content types to lists of extensions.")
                }
                var table: [String: Set<String>] = [:]
                for (type, extensions) in types {
                    guard let list = extensions.arrayValue?.compactMap(\.stringValue), !list.isEmpty,
                        list.count == extensions.arrayValue?.count, type.contains("/")
                    else {
                        throw HearthError.invalidArgument("\(source): contentTypes[\(type)] must be a list of extensions.")
                    }
                    table[type.lowercased()] = Set(list.map { $0.lowercased() })
                }
                out.policy.contentTypes = table
            case "s3PublicURL":
                guard let url = URL(string: try string(key, value)), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                    throw HearthError.invalidArgument("\(source): s3PublicURL must be an http(s) URL.")
                }
                out.s3PublicURL = url
            case "s3Region": out.s3Region = try string(key, value)
            case "externalS3":
                guard let settings = value.objectValue, Set(settings.map(\.0)) == ["endpoint", "bucket"],
                    let text = value["endpoint"]?.stringValue, let endpoint = URL(string: text), ["http", "https"].contains(endpoint.scheme ?? ""),
                    endpoint.host != nil, let bucket = value["bucket"]?.stringValue, !bucket.isEmpty, !bucket.contains("/")
                else {
                    throw HearthError.invalidArgument("\(source): externalS3 must be {\"endpoint\": \"http(s)://host[:port]\", \"bucket\": \"name\"}.")
                }
                out.externalS3 = (endpoint, bucket)
            case "appCheck":
                guard let settings = value.objectValue else { throw HearthError.invalidArgument("\(source): appCheck must be an object.") }
                for (name, setting) in settings {
                    switch name {
                    case "projectNumber":
                        let number = try string("appCheck.projectNumber", setting)
                        guard number.allSatisfy({ $0.isASCII && $0.isNumber }), number.count <= 20 else {
                            throw HearthError.invalidArgument("\(source): appCheck.projectNumber must be digits.")
                        }
                        out.appCheckProjectNumber = number
                    case "tokenTTLSeconds": out.appCheckTokenTTLSeconds = try integer("appCheck.tokenTTLSeconds", setting, 300...(7 * 86400))
                    case "enforcement":
                        guard let modes = setting.objectValue else {
                            throw HearthError.invalidArgument("\(source): appCheck.enforcement must map services to off, monitor or enforce.")
                        }
                        for (service, mode) in modes {
                            guard ["api", "firestore", "storage", "auth", "database"].contains(service), let text = mode.stringValue, let parsed = AppCheckMode(rawValue: text) else {
                                throw HearthError.invalidArgument(
                                    "\(source): appCheck.enforcement.\(service) must be off, monitor or enforce (services: api, firestore, storage, auth, database).")
                            }
                            out.appCheckEnforcement[service] = parsed
                        }
                    default: throw HearthError.invalidArgument("\(source): unknown setting appCheck.\(name).")
                    }
                }
            default:
                throw HearthError.invalidArgument("\(source): unknown setting \(key).")
            }
        }
        return out
    }
}
