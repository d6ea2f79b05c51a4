import HearthCore
import Testing

/// Sizes from Firestore's "Storage size calculations" page, worked by hand.
@Suite("DocumentLimits")
struct DocumentLimitsTests {
    let taskPath = ResourcePath(parsing: "users/jeff/tasks/my_task_id")

    @Test("Document name size: each segment's UTF-8 length + 1, plus 16")
    func nameSize() {
        // users(6) + jeff(5) + tasks(6) + my_task_id(11) + 16 = 44
        #expect(DocumentLimits.nameSize(taskPath) == 44)
        // "é" is two bytes: 2 + 1 + "c"(2) + 16
        #expect(DocumentLimits.nameSize(ResourcePath(parsing: "c/\u{E9}")) == 21)
    }

    @Test("The documented example task document is 147 bytes")
    func documentedExample() {
        let fields: [String: Value] = [
            "type": .string("Personal"),  // 5 + 9
            "done": .boolean(false),  // 5 + 1
            "priority": .integer(1),  // 9 + 8
            "description": .string("Learn Cloud Firestore"),  // 12 + 22
        ]
        #expect(DocumentLimits.mapSize(fields) == 71)
        #expect(DocumentLimits.documentSize(path: taskPath, fields: fields) == 44 + 71 + 32)
    }

    @Test(
        "Value sizes",
        arguments: [
            (Value.null, 1), (.boolean(true), 1), (.integer(-5), 8), (.double(.nan), 8),
            (.timestamp(Timestamp(seconds: 1, nanos: 1)), 8), (.geoPoint(latitude: 1, longitude: 2), 16), (.string(""), 1),
            (.string("\u{E9}t\u{E9}"), 6), (.bytes([1, 2, 3]), 3), (.array([]), 0), (.array([.integer(1), .string("ab")]), 11),
            (.map([:]), 0), (.map(["a": .map(["bc": .boolean(true)])]), 2 + 3 + 1),
        ])
    func valueSizes(_ v: Value, _ expected: Int) {
        #expect(DocumentLimits.valueSize(v) == expected)
    }

    /// "Reference: the document name size" — the name within the database
    /// (`users/jeff` → 6 + 5 + 16), not the `projects/…/documents` prefix of the wire form.
    @Test("A reference is sized as its document name")
    func referenceSize() {
        #expect(DocumentLimits.valueSize(.reference("projects/p/databases/(default)/documents/users/jeff/tasks/my_task_id")) == 44)
        #expect(DocumentLimits.valueSize(.reference("projects/p/databases/(default)/documents/users/jeff")) == 27)
    }

    @Test("A document of exactly 1,048,576 bytes is allowed; one byte more is not")
    func maximumSize() throws {
        let path = ResourcePath(parsing: "c/d")  // 2 + 2 + 16 = 20
        // 20 (name) + 2 ("s") + string bytes + 1 + 32 = 1_048_576
        let n = 1_048_576 - 20 - 2 - 1 - 32
        let fits: [String: Value] = ["s": .string(String(repeating: "x", count: n))]
        #expect(DocumentLimits.documentSize(path: path, fields: fits) == 1_048_576)
        try DocumentLimits.validate(path: path, fields: fits)
        let tooBig: [String: Value] = ["s": .string(String(repeating: "x", count: n + 1))]
        do {
            try DocumentLimits.validate(path: path, fields: tooBig)
            Issue.record("1,048,577 bytes accepted")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    static func nestedMaps(_ levels: Int) -> Value {
        var v = Value.integer(1)
        for _ in 0..<levels { v = .map(["m": v]) }
        return v
    }

    @Test("Depth counts each map or array level; 20 levels are allowed, 21 are not")
    func depth() throws {
        let path = ResourcePath(parsing: "c/d")
        #expect(DocumentLimits.depth(.integer(1)) == 0)
        #expect(DocumentLimits.depth(.map([:])) == 1)
        #expect(DocumentLimits.depth(.array([.map(["a": .array([])])])) == 3)
        #expect(DocumentLimits.depth(Self.nestedMaps(20)) == 20)
        try DocumentLimits.validate(path: path, fields: ["f": Self.nestedMaps(20)])
        #expect(throws: HearthError.self) { try DocumentLimits.validate(path: path, fields: ["f": Self.nestedMaps(21)]) }
        var mixed = Value.integer(1)
        for i in 0..<21 { mixed = i % 2 == 0 ? .map(["m": mixed]) : .array([mixed]) }
        #expect(throws: HearthError.self) { try DocumentLimits.validate(path: path, fields: ["f": mixed]) }
    }

    @Test(
        "Field names: not empty, not reserved, not too long; no array directly in an array",
        arguments: [
            ["": Value.null], ["__x__": .null], ["a": .map(["__y__": .null])], ["a": .map(["": .null])],
            [String(repeating: "k", count: 1501): .null], ["a": .array([.array([])])], ["a": .array([.map(["__z__": .null])])],
        ])
    func fieldNames(_ fields: [String: Value]) {
        do {
            try DocumentLimits.validate(path: ResourcePath(parsing: "c/d"), fields: fields)
            Issue.record("accepted \(fields.keys.map { $0.prefix(10) })")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test("Accepted field names")
    func acceptedNames() throws {
        try DocumentLimits.validate(
            path: ResourcePath(parsing: "c/d"),
            fields: [
                "__": .null, "_x_": .null, "a.b": .null, "\u{1F600}": .null, String(repeating: "k", count: 1500): .null,
                "v": ValueGenerator.vector([.double(1)]), "arr": .array([.map(["m": .array([])])]),
            ])
    }
}
