import HearthCore
import HearthDocuments
import HearthRules
import HearthSQLite
import HearthStorage
import Logging
import Testing

@testable import HearthServer

/// Storage rules that read Firestore documents (`firestore.get()`/`firestore.exists()`),
/// judged against a live in-memory document engine.
@Suite struct StorageSecurityTests {
    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /bottles/{bottleId}/{file} {
              allow read: if firestore.exists(/databases/(default)/documents/bottles/$(bottleId));
              allow write: if request.auth != null
                && firestore.get(/databases/(default)/documents/bottles/$(bottleId)).data.ownerId == request.auth.uid;
            }
            match /budget/{file} {
              allow read: if firestore.exists(/databases/(default)/documents/a/1)
                || firestore.exists(/databases/(default)/documents/a/2)
                || firestore.exists(/databases/(default)/documents/a/3);
            }
            match /other/{file} {
              allow read: if firestore.exists(/databases/other/documents/bottles/b1);
            }
          }
        }
        """

    struct Bed {
        let engine: DocumentEngine
        let security: StorageSecurity
        let loaded: RulesStore.Loaded

        init(documents: Bool = true) async throws {
            engine = try await DocumentEngine(store: try SQLiteDocumentStore.inMemory())
            let store = RulesStore()
            loaded = RulesStore.Loaded(try Ruleset.compile(StorageSecurityTests.rules), origin: "test")
            store.setFileRules(loaded)
            security = StorageSecurity(rules: store, emulator: true, documents: documents ? engine : nil, logger: Logger(label: "test"))
            _ = try await engine.commit(
                DatabaseName(project: "demo-hearth", database: "(default)"),
                [Write.set(ResourcePath(parsing: "bottles/b1"), ["ownerId": .string("alice")])])
        }

        func decision(_ method: RulesMethod, _ name: String, as uid: String?) async -> Bool {
            let identity = uid.map { Identity.user(uid: $0, claims: .object([("sub", .string($0))])) } ?? .unauthenticated
            let incoming = method == .create
                ? StorageSecurity.incoming(bucket: "demo", name: name, size: 10, attributes: ObjectAttributes(contentType: "text/plain"))
                : nil
            do {
                try await security.check(identity, method, bucket: "demo", name: name, existing: nil, incoming: incoming, project: "demo-hearth")
                return true
            } catch {
                return false
            }
        }
    }

    @Test func ownerFromTheDocumentDecidesWrites() async throws {
        let bed = try await Bed()
        #expect(await bed.decision(.create, "bottles/b1/photo.jpg", as: "alice"))
        #expect(!(await bed.decision(.create, "bottles/b1/photo.jpg", as: "mallory")))
        #expect(!(await bed.decision(.create, "bottles/b1/photo.jpg", as: nil)))
    }

    @Test func aMissingDocumentDeniesGetAndIsFalseForExists() async throws {
        let bed = try await Bed()
        #expect(!(await bed.decision(.create, "bottles/nope/photo.jpg", as: "alice")))
        #expect(await bed.decision(.get, "bottles/b1/photo.jpg", as: nil))
        #expect(!(await bed.decision(.get, "bottles/nope/photo.jpg", as: nil)))
    }

    @Test func theLiveDocumentIsRead() async throws {
        let bed = try await Bed()
        #expect(!(await bed.decision(.create, "bottles/b1/photo.jpg", as: "bob")))
        _ = try await bed.engine.commit(
            DatabaseName(project: "demo-hearth", database: "(default)"),
            [Write.set(ResourcePath(parsing: "bottles/b1"), ["ownerId": .string("bob")])])
        #expect(await bed.decision(.create, "bottles/b1/photo.jpg", as: "bob"))
        #expect(!(await bed.decision(.create, "bottles/b1/photo.jpg", as: "alice")))
    }

    @Test func theStorageBudgetIsTwoDocumentAccesses() async throws {
        let bed = try await Bed()
        // Two missing documents, then a third access: over budget, so denied even if it existed.
        _ = try await bed.engine.commit(
            DatabaseName(project: "demo-hearth", database: "(default)"), [Write.set(ResourcePath(parsing: "a/3"), ["x": .integer(1)])])
        #expect(!(await bed.decision(.get, "budget/f", as: nil)))
        _ = try await bed.engine.commit(
            DatabaseName(project: "demo-hearth", database: "(default)"), [Write.set(ResourcePath(parsing: "a/2"), ["x": .integer(1)])])
        #expect(await bed.decision(.get, "budget/f", as: nil))
    }

    @Test func onlyTheDefaultDatabase() async throws {
        let bed = try await Bed()
        #expect(!(await bed.decision(.get, "other/f", as: nil)))
    }

    @Test func withoutADocumentEngineLookupsDeny() async throws {
        let bed = try await Bed(documents: false)
        #expect(!(await bed.decision(.create, "bottles/b1/photo.jpg", as: "alice")))
    }

    @Test func lookupsAreCountedInCoverage() async throws {
        let bed = try await Bed()
        _ = await bed.decision(.create, "bottles/b1/photo.jpg", as: "alice")
        let coverage = bed.loaded.accumulatedCoverage
        let lookups = bed.loaded.ruleset.expressions.indices.filter { i in
            guard case .call(let f, _) = bed.loaded.ruleset.expressions[i].kind, case .member(_, name: "get") = f.kind else { return false }
            return true
        }
        #expect(!lookups.isEmpty)
        #expect(lookups.allSatisfy { coverage.counts[$0].evaluations > 0 })
    }
}
