import HearthCore
import HearthAuth
import Hummingbird
import Foundation

/// Identity Toolkit v2 provider configs (admin only), as firebase-admin's
/// `create/get/list/update/delete_{oidc,saml}_provider_config` call them:
/// `projects/{p}/oauthIdpConfigs[/{id}]` and `projects/{p}/inboundSamlConfigs[/{id}]`.
extension AuthRESTResponder {
    func providerConfigs(_ segments: [String], _ request: inout Request) async throws -> Response {
        guard segments.count == 3 || segments.count == 4, segments[0] == "projects",
            let kind = ProviderConfig.Kind(rawValue: segments[2])
        else { throw HearthError(.notFound, "Not Found") }
        try checkProject(segments[1])
        try await requireAdmin(request)
        let query = Dictionary(try HTTPSupport.queryParameters(request.uri.query), uniquingKeysWith: { a, _ in a })
        let collection = "projects/\(segments[1])/\(kind.rawValue)"
        func resource(_ c: ProviderConfig) -> JSON { .object([("name", .string("\(collection)/\(c.providerID)"))] + (c.resource.objectValue ?? [])) }

        if segments.count == 3 {
            switch request.method {
            case .post:
                let idParameter = kind == .oidc ? "oauthIdpConfigId" : "inboundSamlConfigId"
                guard let id = query[idParameter], !id.isEmpty else { throw AuthErrorCode.invalidProviderID.error("\(idParameter) is required.") }
                let body = try await configBody(&request, kind)
                let created = try await engine.createProviderConfig(try ProviderConfig(kind: kind, providerID: id, resource: body))
                return HTTPSupport.json(resource(created))
            case .get:
                var pageSize = 100
                if let text = query["pageSize"] {
                    guard let n = Int(text), n >= 1, n <= 100 else {
                        throw HearthError.invalidArgument("Invalid value at 'page_size' (TYPE_INT32), \"\(text)\"")
                    }
                    pageSize = n
                }
                let after = query["pageToken"].flatMap { $0.isEmpty ? nil : Base64.urlDecode($0).flatMap { String(bytes: $0, encoding: .utf8) } }
                if let token = query["pageToken"], !token.isEmpty, after == nil { throw HearthError.invalidArgument("Invalid page token.") }
                let page = try await engine.providerConfigs(kind, after: after, limit: pageSize + 1)
                let shown = Array(page.prefix(pageSize))
                var m: [(String, JSON)] = []
                if !shown.isEmpty { m.append((kind.rawValue, .array(shown.map(resource)))) }
                if page.count > pageSize, let last = shown.last {
                    m.append(("nextPageToken", .string(Base64.urlEncode(Array(last.providerID.utf8)))))
                }
                return HTTPSupport.json(.object(m))
            default:
                throw HearthError(.notFound, "Not Found")
            }
        }
        let id = segments[3]
        switch request.method {
        case .get:
            return HTTPSupport.json(resource(try await engine.providerConfig(kind, id: id)))
        case .patch:
            let body = try await configBody(&request, kind)
            let mask = (query["updateMask"] ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            guard !mask.isEmpty else { throw HearthError.invalidArgument("updateMask is required.") }
            return HTTPSupport.json(resource(try await engine.updateProviderConfig(kind, id: id, patch: body, mask: mask)))
        case .delete:
            try await engine.deleteProviderConfig(kind, id: id)
            return HTTPSupport.json(.object([]))
        default:
            throw HearthError(.notFound, "Not Found")
        }
    }

    /// The resource fields of a create or update body (`name` is taken from the path).
    func configBody(_ request: inout Request, _ kind: ProviderConfig.Kind) async throws -> JSON {
        let fields: Set<String> =
            kind == .oidc
            ? ["name", "clientId", "issuer", "displayName", "enabled", "clientSecret", "responseType"]
            : ["name", "idpConfig", "spConfig", "displayName", "enabled"]
        let body = try await AuthRequestBody.read(&request, allowed: fields, limit: maxBody)
        return .object(body.members.filter { fields.contains($0.0) && $0.0 != "name" })
    }
}
