#!/usr/bin/env python3
"""Source of the request fixtures: writes ../cases-*.json. Values: ints stay ints, floats
floats; tagged values {"$timestamp": …}, {"$bytes": hex}, {"$latlng": [a, b]}, {"$ref": path}.
A case: method, path (document path; collection path for list; object name for Storage),
auth (uid string, or {uid, token}), resource (existing data; default: `documents[path]`),
data (request.resource data), after (getAfter state), query {where, or, limit, offset,
orderBy}, collectionGroup, ledger ("batch"), batch (several requests sharing one ledger),
expect (allow | deny | compile error), reason (substring), accesses (count), emulator
("skip: why" when Google's emulator cannot check it)."""
import json, os
HERE = os.path.dirname(os.path.abspath(__file__))

def lines(s): return s.strip("\n").split("\n")

def write(name, title, rules, cases, documents=None, note=None):
    d = {"title": title}
    if note: d["note"] = note
    d["rules"] = lines(rules)
    if documents: d["documents"] = documents
    d["cases"] = cases
    for c in cases:
        if "rules" in c: c["rules"] = lines(c["rules"])
    with open(os.path.join(HERE, "..", f"cases-{name}.json"), "w", encoding="utf-8") as f:
        json.dump(d, f, indent=1, ensure_ascii=False)
        f.write("\n")

def C(name, method, path, expect, **kw):
    c = {"name": name, "method": method, "path": path}
    c.update(kw)
    c["expect"] = expect
    return c

# ---------------------------------------------------------------------------------------
write("basics", "Matching, methods (read = get + list, write = create + update + delete), overlapping allows, no cascade", r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /users/{userId} {
      allow read: if request.auth != null && request.auth.uid == userId;
      allow create: if request.auth.uid == userId && request.resource.data.name is string;
      allow update: if request.auth.uid == userId
                    && request.resource.data.diff(resource.data).affectedKeys().hasOnly(['name', 'bio']);
      allow delete: if false;
      match /private/{doc} {
        allow read, write: if request.auth.uid == userId && request.auth.token.admin == true;
      }
    }
    match /public/{doc} {
      allow read;
      allow write: if request.auth != null
    }
    match /cities/{city} {
      allow read: if true;
    }
    match /cities/{city}/landmarks/{landmark} {
      allow write: if request.auth.uid == 'mayor';
    }
    match /posts/{post} {
      allow get: if resource.data.published == true;
      allow get: if request.auth.uid == resource.data.author;
      allow list: if request.query.limit <= 20;
    }
  }
}
""", [
    C("owner reads own profile", "get", "users/alice", "allow", auth="alice", reason="test.rules:5:"),
    C("user reads someone else's profile", "get", "users/bob", "deny", auth="alice", reason="`request.auth.uid == userId` at test.rules:5:"),
    C("anonymous read", "get", "users/alice", "deny", auth=None),
    C("create own profile with a string name", "create", "users/alice", "allow", auth="alice", data={"name": "Alice"}),
    C("create own profile with a numeric name", "create", "users/alice", "deny", auth="alice", data={"name": 5}),
    C("create someone else's profile", "create", "users/alice", "deny", auth="bob", data={"name": "Alice"}),
    C("update only allowed fields", "update", "users/alice", "allow", auth="alice",
      resource={"name": "A", "email": "a@x.com"}, data={"name": "Alice", "email": "a@x.com", "bio": "hi"}),
    C("update a protected field", "update", "users/alice", "deny", auth="alice",
      resource={"name": "A", "email": "a@x.com"}, data={"name": "A", "email": "evil@x.com"}),
    C("delete is never allowed", "delete", "users/alice", "deny", auth="alice", resource={"name": "A"}),
    C("write covers update", "update", "public/p", "allow", auth="bob", resource={"a": 1}, data={"a": 2}),
    C("write covers delete", "delete", "public/p", "allow", auth="bob", resource={"a": 1}),
    C("write needs auth", "create", "public/p", "deny", auth=None, data={"a": 1}),
    C("allow without condition", "get", "public/p", "allow", auth=None),
    C("read covers list", "list", "public", "allow", auth=None),
    C("missing claim is an error", "get", "users/alice/private/x", "deny", auth="alice", reason="Property admin is undefined"),
    C("custom claim grants", "get", "users/alice/private/x", "allow", auth={"uid": "alice", "token": {"admin": True}}),
    C("claim true but other user's tree", "get", "users/bob/private/x", "deny", auth={"uid": "alice", "token": {"admin": True}}),
    C("nested match applies to the subcollection", "create", "cities/SF/landmarks/tower", "allow", auth="mayor", data={"h": 1}),
    C("rules do not cascade: read on city does not cover landmarks", "get", "cities/SF/landmarks/tower", "deny", auth="mayor"),
    C("partial match evaluates nothing", "create", "cities/SF", "deny", auth="mayor", data={}),
    C("published post for anyone", "get", "posts/p1", "allow", auth=None, resource={"published": True, "author": "bob"}),
    C("second allow: the author reads a draft", "get", "posts/p1", "allow", auth="bob", resource={"published": False, "author": "bob"}),
    C("draft for someone else", "get", "posts/p1", "deny", auth="carol", resource={"published": False, "author": "bob"}),
    C("missing post: resource is null", "get", "posts/nope", "deny", auth="bob", resource=None, reason="Null value error"),
    C("list within the limit", "list", "posts", "allow", auth=None, query={"limit": 10}),
    C("list without a limit: null <= 20 errors", "list", "posts", "deny", auth=None, query={}),
    C("list over the limit", "list", "posts", "deny", auth=None, query={"limit": 30}),
    C("list by owner rule: the document id is unknown", "list", "users", "deny", auth="alice"),
    C("no match block", "get", "nothing/here", "deny", auth="alice", reason="no match block"),
    C("method not granted", "delete", "cities/SF", "deny", auth="alice", resource={}, reason="no allow statement grants 'delete'"),
])

# ---------------------------------------------------------------------------------------
write("functions", "Functions: lexical scope, let (lazy), nested calls, limits", r"""
rules_version = '2';
function signedIn() { return request.auth != null; }
service cloud.firestore {
  function isAdmin() {
    return signedIn() && request.auth.token.admin == true;
  }
  match /databases/{database}/documents {
    function owns(uid) { return signedIn() && request.auth.uid == uid; }
    function profile() {
      return get(/databases/$(database)/documents/users/$(request.auth.uid)).data;
    }
    function canEdit(doc) {
      let role = profile().role;
      let isOwner = doc.owner == request.auth.uid;
      return isOwner || role == 'editor';
    }
    function seesUid() { return uid == 'x'; }
    match /notes/{noteId} {
      function noteOwner() { return resource.data.owner; }
      allow read: if owns(noteOwner()) || isAdmin();
      allow update: if canEdit(resource.data);
    }
    match /wild/{uid} {
      allow get: if seesUid();
    }
    match /shadow/{uid} {
      function owns(x) { return x == 'shadowed'; }
      allow get: if owns(uid);
    }
  }
}
""", [
    C("owner through nested functions", "get", "notes/n1", "allow", auth="alice", resource={"owner": "alice"}),
    C("not the owner", "get", "notes/n1", "deny", auth="bob", resource={"owner": "alice"}),
    C("service-level function with a claim", "get", "notes/n1", "allow", auth={"uid": "bob", "token": {"admin": True}}, resource={"owner": "alice"}),
    C("anonymous", "get", "notes/n1", "deny", auth=None, resource={"owner": "alice"}),
    C("editor via a let binding that reads a document", "update", "notes/n1", "allow", auth="bob", resource={"owner": "alice"},
      data={"owner": "alice", "t": 1}, accesses=1),
    C("viewer", "update", "notes/n1", "deny", auth="carol", resource={"owner": "alice"}, data={"owner": "alice"}),
    C("unused let is never evaluated (no document read)", "update", "notes/n1", "allow", auth="alice",
      resource={"owner": "alice"}, data={"owner": "alice"}, accesses=0),
    C("a function sees its declaring scope only (uid is not visible)", "get", "wild/x", "deny", auth="alice",
      reason="Variable not found"),
    C("an inner function shadows an outer one", "get", "shadow/shadowed", "allow", auth=None),
    C("recursion is a compile error", "get", "a/b", "compile error", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function f(n) { return n == 0 || g(n - 1); }
    function g(n) { return f(n); }
    match /a/{b} { allow get: if f(1); }
  }
}
""", emulator="skip: compile errors are checked by the diagnostics fixtures"),
    C("let needs rules_version 2", "get", "a/b", "compile error", rules=r"""
service cloud.firestore {
  match /databases/{database}/documents {
    function f() { let x = 1; return x == 1; }
    match /a/{b} { allow get: if f(); }
  }
}
""", emulator="skip: compile errors are checked by the diagnostics fixtures"),
    C("let bindings see earlier ones", "get", "a/b", "allow", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function f(a) { let y = a + 1; let z = y * 2; return z == 6; }
    match /a/{b} { allow get: if f(2); }
  }
}
"""),
    C("wrong arity denies at evaluation", "get", "a/b", "deny", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function f(n) { return n == 0; }
    match /a/{b} { allow get: if f(0, 1); }
  }
}
""", reason="takes 1 argument"),
    C("an erroring let that is used denies", "get", "a/b", "deny", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function f() { let bad = 1 / 0; return bad == 1; }
    match /a/{b} { allow get: if f(); }
  }
}
""", reason="Division by zero"),
    C("arguments are lazy: an erroring argument that is never used", "get", "a/b", "allow", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function ignore(x) { return true; }
    match /a/{b} { allow get: if ignore(1 / 0); }
  }
}
"""),
    C("an erroring argument that is used is an error like any other (absorbed by || here)", "get", "a/b", "allow", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function use(x) { return x == 1 || true; }
    match /a/{b} { allow get: if use(1 / 0) && use(get(/databases/$(database)/documents/no/doc).data.x); }
  }
}
"""),
    C("a parameter may shadow a global", "get", "a/b", "allow", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function shadow(request) { return request == 1; }
    match /a/{b} { allow get: if shadow(1); }
  }
}
"""),
    C("a let cannot refer to a later let", "get", "a/b", "deny", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function fwd() { let a = b; let b = 1; return a == 1; }
    match /a/{b} { allow get: if fwd(); }
  }
}
"""),
    C("a namespace cannot be a wildcard name", "get", "math/m", "compile error", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /math/{math} { allow get: if math == 'm'; }
  }
}
"""),
    C("an erroring let that is unused does not", "get", "a/b", "allow", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function f() { let bad = 1 / 0; return true; }
    match /a/{b} { allow get: if f(); }
  }
}
"""),
], documents={"users/bob": {"role": "editor"}, "users/carol": {"role": "viewer"}})

# ---------------------------------------------------------------------------------------
V2_WILD = r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /a/{x} {
      match /{rest=**} { allow get: if true; }
    }
    match /c/{rest=**} { allow get: if rest == /d/e/f; }
    match /e/{rest=**} { allow get: if string(rest) == '/f/g/h'; }
    match /g/{rest=**} { allow get: if rest[0] == 'h' && rest is path; }
    match /{prefix=**}/b/{y} { allow get: if prefix == /m/n; }
    match /{prefix=**}/z/{y} { allow get: if true; }
    match /q/{rest=**} {
      allow get: if !exists(/databases/$(database)/documents/x/$(rest));
    }
  }
}
"""
V1_WILD = "\n".join(l for l in V2_WILD.split("\n") if not l.startswith("rules_version") and "{prefix=**}/" not in l)
write("wildcards", "Recursive wildcards: rules_version 1 (one or more segments, last only) vs 2 (zero or more, anywhere)", V2_WILD, [
    C("v2: {rest=**} matches zero segments", "get", "a/b", "allow"),
    C("v2: {rest=**} matches several segments", "get", "a/b/c/d", "allow"),
    C("v2: the wildcard is a path", "get", "c/d/e/f", "allow"),
    C("v2: a different path", "get", "c/d/e/g", "deny"),
    C("v2: string() of the path", "get", "e/f/g/h", "allow"),
    C("v2: indexing the path", "get", "g/h/i/j", "allow"),
    C("v2: {prefix=**} in the middle", "get", "m/n/b/y", "allow"),
    C("v2: the middle wildcard with zero segments", "get", "b/y", "deny"),
    C("v2: the middle wildcard with zero segments (true)", "get", "z/y", "allow"),
    C("v2: splicing a path into a path literal", "get", "q/r/s/t", "allow"),
    C("v1: {rest=**} needs at least one segment", "get", "a/b", "deny", rules=V1_WILD),
    C("v1: several segments", "get", "a/b/c/d", "allow", rules=V1_WILD),
    C("v1: the wildcard is a path", "get", "c/d/e/f", "allow", rules=V1_WILD),
    C("v1: a recursive wildcard must come last", "get", "a/b", "compile error", rules=r"""
service cloud.firestore {
  match /databases/{database}/documents {
    match /{rest=**}/b/{y} { allow get: if true; }
  }
}
""", emulator="skip: compile errors are checked by the diagnostics fixtures"),
    C("v2: only one recursive wildcard per path", "get", "a/b", "compile error", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /{a=**}/b/{c=**} { allow get: if true; }
  }
}
""", emulator="skip: compile errors are checked by the diagnostics fixtures"),
    C("overlapping matches: any allow wins", "get", "o/p", "allow", rules=r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /o/{p} { allow get: if false; }
    match /{document=**} { allow get: if true; }
  }
}
"""),
])

# ---------------------------------------------------------------------------------------
DOC = "/databases/$(database)/documents"
def chain(prefix, n): return " && ".join(f"exists({DOC}/d/{prefix}{i})" for i in range(1, n + 1))
write("documents", "get(), exists(), getAfter(), existsAfter() and the document-access budget", f"""
rules_version = '2';
service cloud.firestore {{
  match /databases/{{database}}/documents {{
    function me() {{ return {DOC}/users/$(request.auth.uid); }}
    match /rooms/{{room}} {{
      allow get: if get(me()).data.rooms.hasAny([room]);
      allow create: if exists(me())
                    && getAfter({DOC}/rooms/$(room)).data.owner == request.auth.uid;
      allow delete: if !existsAfter({DOC}/rooms/$(room));
    }}
    match /ten/{{n}} {{ allow get: if {chain('', 10)}; }}
    match /eleven/{{n}} {{ allow get: if {chain('', 11)}; }}
    match /cached/{{n}} {{ allow get: if {" && ".join(f"exists({DOC}/d/1)" for _ in range(15))}; }}
    match /short/{{n}} {{ allow get: if true || get({DOC}/d/1).data.x == 1; }}
    match /missing/{{n}} {{ allow get: if get({DOC}/nope/nope).data.x == 1 || n == 'ok'; }}
    match /missingnull/{{n}} {{ allow get: if get({DOC}/nope/nope) == null; }}
    match /notexists/{{n}} {{ allow get: if !exists({DOC}/nope/nope); }}
    match /collection/{{n}} {{ allow get: if exists({DOC}/users); }}
    match /batch/{{n}} {{ allow update: if exists({DOC}/d/$(n + '1')) && exists({DOC}/d/$(n + '2')) && exists({DOC}/d/$(n + '3'))
                                  && exists({DOC}/d/$(n + '4')) && exists({DOC}/d/$(n + '5')) && exists({DOC}/d/$(n + '6'))
                                  && exists({DOC}/d/$(n + '7')); }}
    match /ref/{{n}} {{ allow get: if get(get({DOC}/refs/r).data.target).data.ok == true; }}
  }}
}}
""", [
    C("get() reads another document", "get", "rooms/r1", "allow", auth="alice", accesses=1),
    C("get() of the caller's profile: not a member", "get", "rooms/r2", "deny", auth="alice"),
    C("get() of a missing document errors", "get", "rooms/r1", "deny", auth="nobody", reason="does not exist"),
    C("getAfter() sees the write being made", "create", "rooms/r9", "allow", auth="alice", data={"owner": "alice"}),
    C("getAfter(): wrong owner", "create", "rooms/r9", "deny", auth="alice", data={"owner": "bob"}),
    C("existsAfter() is false after a delete", "delete", "rooms/r1", "allow", auth="alice", resource={"owner": "alice"}),
    C("ten distinct documents fit the budget", "get", "ten/x", "allow", accesses=10),
    C("the eleventh document access denies", "get", "eleven/x", "deny", reason="limit of 10 document accesses"),
    C("repeated access to one document counts once", "get", "cached/x", "allow", accesses=1),
    C("short-circuited calls do not count", "get", "short/x", "allow", accesses=0),
    C("a missing document's error is absorbed by ||", "get", "missing/ok", "allow"),
    C("a missing document's error denies", "get", "missing/no", "deny"),
    C("get(missing) == null errors (it is not null)", "get", "missingnull/x", "deny"),
    C("exists() of a missing document is false", "get", "notexists/x", "allow"),
    C("a collection path is not a document", "get", "collection/x", "deny", reason="not a document path"),
    C("a reference field is a path", "get", "ref/x", "allow"),
    C("a batch shares 20 accesses: the third write with 7 new documents is denied", "update", "batch/a", "allow",
      ledger="batch", batch=[
        {"path": "batch/a", "expect": "allow", "accesses": 7},
        {"path": "batch/b", "expect": "allow", "accesses": 7},
        {"path": "batch/c", "expect": "deny", "reason": "limit of 20 document accesses"},
    ], resource={"x": 1}, data={"x": 2}, emulator="skip: batches are not checked against the emulator"),
], documents={
    "users/alice": {"rooms": ["r1"]},
    "rooms/r1": {"owner": "alice"},
    "refs/r": {"target": {"$ref": "/databases/(default)/documents/targets/t"}},
    "targets/t": {"ok": True},
    **{f"d/{i}": {} for i in range(1, 12)},
    **{f"d/{p}{i}": {} for p in "abc" for i in range(1, 8)},
})

# ---------------------------------------------------------------------------------------
write("writes", "Write validation: request.resource, resource, diffs, time, types", r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /profiles/{uid} {
      allow create: if request.auth.uid == uid
        && resource == null
        && request.resource.data.keys().hasOnly(['name', 'age', 'createdAt', 'tags'])
        && request.resource.data.name is string
        && request.resource.data.name.size() <= 20
        && request.resource.data.name.matches('[A-Za-z ]+')
        && request.resource.data.get('age', 0) is int
        && request.resource.data.createdAt == request.time
        && (!('tags' in request.resource.data) || request.resource.data.tags.size() <= 3);
      allow update: if request.auth.uid == uid
        && request.resource.data.diff(resource.data).unchangedKeys().hasAll(['createdAt'])
        && request.resource.data.diff(resource.data).removedKeys().size() == 0
        && request.resource.id == uid
        && request.resource.__name__ == /databases/$(database)/documents/profiles/$(uid);
      allow delete: if request.resource == null;
    }
    match /events/{id} {
      allow create: if request.resource.data.at > request.time - duration.value(1, 'h')
                    && request.resource.data.at < request.time + duration.value(1, 'h')
                    && request.resource.data.where is latlng
                    && request.resource.data.where.distance(latlng.value(48.8566, 2.3522)) < 10000;
    }
  }
}
""", [
    C("valid create", "create", "profiles/alice", "allow", auth="alice",
      data={"name": "Alice", "age": 30, "createdAt": {"$timestamp": "2024-01-01T00:30:00Z"}}, emulator="skip: depends on request.time"),
    C("create with tags", "create", "profiles/alice", "allow", auth="alice",
      data={"name": "Alice", "createdAt": {"$timestamp": "2024-01-01T00:30:00Z"}, "tags": ["a", "b"]}, emulator="skip: depends on request.time"),
    C("too many tags", "create", "profiles/alice", "deny", auth="alice",
      data={"name": "Alice", "createdAt": {"$timestamp": "2024-01-01T00:30:00Z"}, "tags": ["a", "b", "c", "d"]}, emulator="skip: depends on request.time"),
    C("an extra field", "create", "profiles/alice", "deny", auth="alice",
      data={"name": "Alice", "createdAt": {"$timestamp": "2024-01-01T00:30:00Z"}, "admin": True}, emulator="skip: depends on request.time"),
    C("name fails the pattern", "create", "profiles/alice", "deny", auth="alice",
      data={"name": "Al1ce", "createdAt": {"$timestamp": "2024-01-01T00:30:00Z"}}, emulator="skip: depends on request.time"),
    C("age is a float", "create", "profiles/alice", "deny", auth="alice",
      data={"name": "Alice", "age": 30.5, "createdAt": {"$timestamp": "2024-01-01T00:30:00Z"}}, emulator="skip: depends on request.time"),
    C("createdAt is not request.time", "create", "profiles/alice", "deny", auth="alice",
      data={"name": "Alice", "createdAt": {"$timestamp": "2024-01-01T00:00:00Z"}}, emulator="skip: depends on request.time"),
    C("create over an existing document (resource != null)", "create", "profiles/alice", "deny", auth="alice",
      resource={"name": "Old"}, data={"name": "Alice", "createdAt": {"$timestamp": "2024-01-01T00:30:00Z"}},
      emulator="skip: a create over an existing document is an update in Firestore"),
    C("valid update", "update", "profiles/alice", "allow", auth="alice",
      resource={"name": "A", "createdAt": {"$timestamp": "2023-01-01T00:00:00Z"}},
      data={"name": "B", "createdAt": {"$timestamp": "2023-01-01T00:00:00Z"}}),
    C("update changes createdAt", "update", "profiles/alice", "deny", auth="alice",
      resource={"name": "A", "createdAt": {"$timestamp": "2023-01-01T00:00:00Z"}},
      data={"name": "B", "createdAt": {"$timestamp": "2023-06-01T00:00:00Z"}}),
    C("update removes a field", "update", "profiles/alice", "deny", auth="alice",
      resource={"name": "A", "age": 3, "createdAt": {"$timestamp": "2023-01-01T00:00:00Z"}},
      data={"name": "B", "createdAt": {"$timestamp": "2023-01-01T00:00:00Z"}}),
    C("request.resource is null on delete", "delete", "profiles/alice", "allow", auth="alice", resource={"name": "A"}),
    C("event near Paris, now", "create", "events/e1", "allow",
      data={"at": {"$timestamp": "2024-01-01T00:10:00Z"}, "where": {"$latlng": [48.86, 2.35]}}, emulator="skip: depends on request.time"),
    C("event in the past", "create", "events/e1", "deny",
      data={"at": {"$timestamp": "2023-12-31T20:00:00Z"}, "where": {"$latlng": [48.86, 2.35]}}, emulator="skip: depends on request.time"),
    C("event far away", "create", "events/e1", "deny",
      data={"at": {"$timestamp": "2024-01-01T00:10:00Z"}, "where": {"$latlng": [40.7, -74.0]}}, emulator="skip: depends on request.time"),
], note="request.time is 2024-01-01T00:30:00Z in every case; the emulator uses the real clock, so time-based cases are skipped there")

# ---------------------------------------------------------------------------------------
write("queries", "Rules are not filters: list queries are judged for every document they can return", r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /owned/{d} { allow list: if resource.data.owner == request.auth.uid; }
    match /scores/{d} { allow list: if resource.data.x > 5; }
    match /range/{d} { allow list: if resource.data.x >= 5 && resource.data.x < 100; }
    match /either/{d} { allow list: if resource.data.x < 5 || resource.data.x > 100; }
    match /typed/{d} { allow list: if resource.data.x is number; }
    match /has/{d} { allow list: if 'x' in resource.data; }
    match /notthree/{d} { allow list: if resource.data.x != 3; }
    match /tags/{d} { allow list: if 'a' in resource.data.tags; }
    match /tagsany/{d} { allow list: if resource.data.tags.hasAny(['a', 'z']); }
    match /nested/{d} { allow list: if resource.data.a.b == 1; }
    match /getdefault/{d} { allow list: if resource.data.get('x', 0) == 5; }
    match /size/{d} { allow list: if resource.data.x.size() == 5; }
    match /byid/{d} { allow list: if d == 'z'; }
    match /resid/{d} { allow list: if resource.id == 'z'; }
    match /nullres/{d} { allow list: if resource == null; }
    match /nonnull/{d} { allow list: if resource != null; }
    match /absorb/{d} { allow list: if resource.data.x == 'a' || true; }
    match /notfilter/{d} { allow list: if !(resource.data.x < 5); }
    match /limited/{d} { allow list: if request.query.limit <= 10 && request.query.offset == 0; }
    match /ordered/{d} { allow list: if request.query.orderBy.x == 'DESC'; }
    match /auth/{d} { allow list: if request.auth != null; }
    match /forums/{f}/posts/{p} { allow list: if true; }
    match /{path=**}/comments/{c} { allow list: if resource.data.visible == true; }
  }
}
""", [
    C("equality on the owner field", "list", "owned", "allow", auth="alice", query={"where": [["owner", "==", "alice"]]}),
    C("equality on another owner", "list", "owned", "deny", auth="alice", query={"where": [["owner", "==", "bob"]]}),
    C("no filter: some document could belong to someone else", "list", "owned", "deny", auth="alice",
      reason="rules are not filters"),
    C("x > 10 implies x > 5", "list", "scores", "allow", query={"where": [["x", ">", 10]]}),
    C("x > 5 implies x > 5", "list", "scores", "allow", query={"where": [["x", ">", 5]]}),
    C("x >= 5 does not imply x > 5", "list", "scores", "deny", query={"where": [["x", ">=", 5]]}),
    C("x > 4 does not", "list", "scores", "deny", query={"where": [["x", ">", 4]]}),
    C("x == 7 binds the value", "list", "scores", "allow", query={"where": [["x", "==", 7]]}),
    C("x > 5.5 (a float) does not decide an int comparison", "list", "scores", "deny", query={"where": [["x", ">", 5.5]]}),
    C("x < 3 contradicts", "list", "scores", "deny", query={"where": [["x", "<", 3]]}),
    C("in: every value must pass", "list", "scores", "allow", query={"where": [["x", "in", [6, 42]]]}),
    C("in: one value fails", "list", "scores", "deny", query={"where": [["x", "in", [1, 6]]]}, reason="x == 1"),
    C("OR: every branch must pass", "list", "scores", "allow", query={"or": [[["x", "==", 6]], [["x", ">", 10]]]}),
    C("OR: one branch fails", "list", "scores", "deny", query={"or": [[["x", "==", 6]], [["x", "==", 1]]]}),
    C("two inequalities make a range", "list", "range", "allow", query={"where": [["x", ">=", 5], ["x", "<", 50]]}),
    C("an open range", "list", "range", "deny", query={"where": [["x", ">=", 5]]}),
    C("the first disjunct of the rule decides", "list", "either", "allow", query={"where": [["x", "<", 3]]}),
    C("a type check on a constrained field is undecided", "list", "typed", "deny", query={"where": [["x", ">", 10]]}),
    C("a type check on a bound field", "list", "typed", "allow", query={"where": [["x", "==", 1]]}),
    C("a filter implies the field exists", "list", "has", "allow", query={"where": [["x", ">", 10]]}),
    C("!= implies it too", "list", "has", "allow", query={"where": [["x", "!=", 1]]}),
    C("orderBy does not", "list", "has", "deny", query={"orderBy": [["x"]]}),
    C("nothing implies it", "list", "has", "deny"),
    C("x != 3 from x != 3", "list", "notthree", "allow", query={"where": [["x", "!=", 3]]}),
    C("x != 3 from x > 3", "list", "notthree", "allow", query={"where": [["x", ">", 3]]}),
    C("x != 3 from x == 4", "list", "notthree", "allow", query={"where": [["x", "==", 4]]}),
    C("x != 3 from not-in", "list", "notthree", "allow", query={"where": [["x", "not-in", [3, 4]]]}),
    C("x != 3 undecided", "list", "notthree", "deny", query={"where": [["x", "<", 10]]}),
    C("array-contains decides in", "list", "tags", "allow", query={"where": [["tags", "array-contains", "a"]]}),
    C("array-contains-any per value", "list", "tags", "allow", query={"where": [["tags", "array-contains-any", ["a"]]]}),
    C("array-contains-any with another value", "list", "tags", "deny", query={"where": [["tags", "array-contains-any", ["a", "b"]]]}),
    C("array-contains decides hasAny", "list", "tagsany", "allow", query={"where": [["tags", "array-contains", "a"]]}),
    C("nested field path", "list", "nested", "allow", query={"where": [["a.b", "==", 1]]}),
    C("get() with a bound field", "list", "getdefault", "allow", query={"where": [["x", "==", 5]]}),
    C("a method on a bound value", "list", "size", "allow", query={"where": [["x", "==", "abcde"]]}),
    C("the document id is unknown", "list", "byid", "deny"),
    C("a __name__ filter binds the document id", "list", "byid", "allow",
      query={"where": [["__name__", "==", {"$ref": "/databases/(default)/documents/byid/z"}]]}),
    C("resource.id is unknown", "list", "resid", "deny"),
    C("resource is never null in a list", "list", "nullres", "deny"),
    C("resource != null", "list", "nonnull", "allow"),
    C("an undecided comparison is absorbed by || true", "list", "absorb", "allow"),
    C("a contradiction is not proven false: its negation errors too", "list", "notfilter", "deny", query={"where": [["x", ">", 10]]}),
    C("a bound value can be false", "list", "notfilter", "allow", query={"where": [["x", "==", 10]]}),
    C("limit and offset", "list", "limited", "allow", query={"limit": 10}),
    C("limit too large", "list", "limited", "deny", query={"limit": 11}),
    C("offset set", "list", "limited", "deny", query={"limit": 5, "offset": 2}),
    C("orderBy direction", "list", "ordered", "allow", query={"orderBy": [["x", "desc"]]}),
    C("orderBy ascending", "list", "ordered", "deny", query={"orderBy": [["x", "asc"]]}),
    C("a rule that ignores resource", "list", "auth", "allow", auth="alice"),
    C("collection group: a fixed parent path does not cover it", "list", "", "deny", collectionGroup="posts"),
    C("a subcollection query under a known parent", "list", "forums/f1/posts", "allow"),
    C("collection group with {path=**}", "list", "", "allow", collectionGroup="comments", query={"where": [["visible", "==", True]]}),
    C("collection group: the rule must hold for all documents", "list", "", "deny", collectionGroup="comments"),
    C("collection group under a parent", "list", "forums/f1", "allow", collectionGroup="comments", query={"where": [["visible", "==", True]]}),
])

# ---------------------------------------------------------------------------------------
write("storage", "Cloud Storage rules", r"""
rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{file} {
      allow read: if request.auth != null && request.auth.uid == uid;
      allow create: if request.auth.uid == uid
                    && request.resource.size < 5 * 1024 * 1024
                    && request.resource.contentType.matches('image/.*')
                    && request.resource.metadata.get('owner', '') == uid;
      allow update: if request.auth.uid == uid
                    && request.resource.metadata.keys().hasOnly(['owner', 'caption']);
      allow delete: if request.auth.uid == uid && resource.size > 0;
    }
    match /public/{all=**} {
      allow get;
      allow list: if request.auth != null;
    }
    match /nooverwrite/{file} {
      allow create: if resource == null;
    }
    match /paths/{a}/{b} {
      allow get: if request.path[0] == 'b' && request.path[1] == bucket && request.path[3] == 'paths'
                 && bucket == 'bucket' && string(request.path) == '/b/bucket/o/paths/' + a + '/' + b;
    }
    match /meta/{file} {
      allow get: if resource.metadata.secret == 'x';
    }
    match /fs/{file} {
      allow get: if firestore.get(/databases/(default)/documents/users/$(request.auth.uid)).data.admin == true;
      allow delete: if firestore.exists(/databases/(default)/documents/d/1) && firestore.exists(/databases/(default)/documents/d/2)
                    && firestore.exists(/databases/(default)/documents/d/3);
    }
  }
}
""", [
    C("owner downloads", "get", "users/alice/cat.png", "allow", auth="alice", resource={"size": 10, "contentType": "image/png"}),
    C("someone else downloads", "get", "users/alice/cat.png", "deny", auth="bob", resource={"size": 10}),
    C("upload an image", "create", "users/alice/cat.png", "allow", auth="alice",
      data={"size": 1000, "contentType": "image/png", "metadata": {"owner": "alice"}}),
    C("upload a file that is too big", "create", "users/alice/cat.png", "deny", auth="alice",
      data={"size": 6000000, "contentType": "image/png", "metadata": {"owner": "alice"}}),
    C("upload a text file", "create", "users/alice/a.txt", "deny", auth="alice",
      data={"size": 10, "contentType": "text/plain", "metadata": {"owner": "alice"}}),
    C("upload without a content type (absent property errors)", "create", "users/alice/a.png", "deny", auth="alice",
      data={"size": 10, "metadata": {"owner": "alice"}}),
    C("metadata-only update", "update", "users/alice/cat.png", "allow", auth="alice",
      resource={"size": 10}, data={"size": 10, "metadata": {"owner": "alice", "caption": "hi"}}),
    C("metadata update with an unknown key", "update", "users/alice/cat.png", "deny", auth="alice",
      resource={"size": 10}, data={"size": 10, "metadata": {"x": "y"}}),
    C("delete a non-empty object", "delete", "users/alice/cat.png", "allow", auth="alice", resource={"size": 10}),
    C("public read of a deep path", "get", "public/a/b/c.txt", "allow"),
    C("list under a public prefix", "list", "public/a/", "allow", auth="alice"),
    C("list needs auth", "list", "public/a/", "deny"),
    C("list with rules_version 1 is denied", "list", "public/a/", "deny", auth="alice", rules=r"""
service firebase.storage {
  match /b/{bucket}/o {
    match /public/{all=**} { allow read: if true; }
  }
}
""", reason="rules_version = '2'"),
    C("create over nothing", "create", "nooverwrite/f", "allow", data={"size": 1}),
    C("create over an existing object", "create", "nooverwrite/f", "deny", resource={"size": 1}, data={"size": 1}),
    C("request.path starts with b, bucket, o", "get", "paths/x/y", "allow", resource={"size": 1}),
    C("a custom metadata key that is set", "get", "meta/f", "allow", resource={"size": 1, "metadata": {"secret": "x"}}),
    C("a custom metadata key that is not set errors", "get", "meta/f", "deny", resource={"size": 1, "metadata": {}}),
    C("firestore.get from Storage rules", "get", "fs/f", "allow", auth="root", resource={"size": 1}),
    C("firestore.get for another user", "get", "fs/f", "deny", auth="alice", resource={"size": 1}),
    C("Storage allows 2 Firestore accesses", "delete", "fs/f", "deny", resource={"size": 1}, reason="limit of 2"),
], documents={"users/root": {"admin": True}, "users/alice": {"admin": False}, "d/1": {}, "d/2": {}, "d/3": {}},
note="Google's Firestore emulator does not run Storage rules; these cases are not checked against it")

# ---------------------------------------------------------------------------------------
deep = "\n".join(f"    function f{i}() {{ return f{i+1}(); }}" for i in range(1, 21)) + "\n    function f21() { return true; }"
DEEP22 = ("rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n"
          + "\n".join(f"    function f{i}() {{ return f{i+1}(); }}" for i in range(1, 22)) + "\n    function f22() { return true; }\n"
          + "    match /deep/{x} { allow get: if f1(); }\n  }\n}\n")
deep20 = "\n".join(f"    function g{i}() {{ return g{i+1}(); }}" for i in range(1, 20)) + "\n    function g20() { return true; }"
write("evaluation", "Decisions, reasons, budgets and non-boolean conditions", r"""
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /a/{x} {
      allow get: if resource.data.missing == 1;
      allow get: if x == 'ok';
    }
    match /nonbool/{x} { allow get: if 'yes'; }
    match /steps/{x} { allow get: if [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].size() == 10; }
""" + deep + "\n" + deep20 + r"""
    match /deep/{x} { allow get: if f1(); }
    match /deep20/{x} { allow get: if g1(); }
  }
}
""", [
    C("an erroring allow does not stop a later one", "get", "a/ok", "allow", resource={}, reason="test.rules:6:"),
    C("both fail: the reason names each", "get", "a/no", "deny", resource={}, reason="Property missing is undefined"),
    C("a non-boolean condition denies", "get", "nonbool/x", "deny", reason="gave a string"),
    C("within the step budget", "get", "steps/x", "allow", maxSteps=20),
    C("over the step budget", "get", "steps/x", "deny", maxSteps=5, reason="evaluation steps",
      emulator="skip: the budget is set per test"),
    C("a chain of 21 functions (20 nested calls) is allowed", "get", "deep/x", "allow"),
    C("a chain of 20 functions", "get", "deep20/x", "allow"),
    C("a chain of 22 functions is a compile error", "get", "deep/x", "compile error", rules=DEEP22,
      emulator="skip: compile errors are checked by the diagnostics fixtures"),
])
