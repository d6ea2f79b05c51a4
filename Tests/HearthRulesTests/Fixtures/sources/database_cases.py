#!/usr/bin/env python3
"""Generates ../database-cases.json: Realtime Database rules + requests + expected outcomes.

Each group has `rules` (a JSON object, or a list of text lines when comments matter) and
`data` (the tree before the request); each case may override both. A case is
  {name, op: read|write|update, path, auth, query, value, update, now, expect, reason?}
where `auth` is a uid string, {uid, provider, token}, {"override": {...}} or null, and
`expect` is allow | deny | validate-fail. `reason` is a substring the explanation must hold.

Semantics follow the Firebase docs (database/security/core-syntax, rules-conditions,
reference/security/database) and /work/shared/reference/rules-language.md section 6.
Run: python3 database_cases.py
"""
import json
import os

NOW = 1_700_000_000_000
PUSH = "-NjA1b2c3d4e5f6g7h8i"  # 20 characters, like a push id
assert len(PUSH) == 20

groups = []


def group(name, rules, data=None):
    g = {"name": name, "rules": rules, "data": data, "cases": []}
    groups.append(g)
    return g


def case(g, name, op, path, expect, auth=None, **extra):
    c = {"name": name, "op": op, "path": path, "auth": auth, "expect": expect}
    c.update(extra)
    g["cases"].append(c)


# --- Drift: users, bottles with storage paths, chats under push keys -----------------------

drift_rules = {
    "rules": {
        "users": {
            ".indexOn": ["displayName"],
            "$uid": {
                ".read": "auth != null",
                ".write": "auth != null && auth.uid === $uid",
                ".validate": "newData.hasChildren(['displayName', 'createdAt'])",
                "displayName": {".validate": "newData.isString() && newData.val().length > 0 && newData.val().length <= 40"},
                "createdAt": {".validate": "newData.isNumber() && newData.val() <= now"},
                "email": {".validate": "newData.val() === auth.token.email"},
                "$other": {".validate": False},
            },
        },
        "bottles": {
            ".indexOn": ["owner", "expiresAt"],
            ".read": "auth != null && query.orderByChild === 'owner' && query.equalTo === auth.uid",
            "$bottleId": {
                ".read": "auth != null && data.child('expiresAt').val() > now",
                ".write": "auth != null && (data.exists() ? data.child('owner').val() === auth.uid"
                          " : newData.child('owner').val() === auth.uid)",
                ".validate": "newData.hasChildren(['owner', 'content', 'expiresAt'])",
                "owner": {".validate": "newData.val() === auth.uid"},
                "expiresAt": {".validate": "newData.isNumber() && newData.val() > now"},
                "content": {
                    ".validate": "newData.hasChild('image_path') || newData.hasChild('audio_path') || newData.hasChild('text')",
                    "image_path": {".validate": "newData.isString() && newData.val().matches(/^bottles\\/[A-Za-z0-9_-]+\\/image\\.(jpg|png)$/)"},
                    "audio_path": {".validate": "newData.isString() && newData.val().beginsWith('bottles/' + $bottleId + '/') && newData.val().endsWith('.m4a')"},
                    "text": {".validate": "newData.isString() && newData.val().length <= 500"},
                    "$other": {".validate": False},
                },
            },
        },
        "chats": {
            "$chatId": {
                ".read": "auth != null && root.child('chats/' + $chatId + '/members/' + auth.uid).val() === true",
                "members": {
                    "$member": {
                        ".write": "auth != null && auth.uid === $member",
                        ".validate": "newData.isBoolean()",
                    }
                },
                "messages": {
                    ".indexOn": "sentAt",
                    "$messageId": {
                        ".write": "auth != null && !data.exists() && data.parent().parent().child('members').hasChild(auth.uid)",
                        ".validate": "newData.hasChildren(['from', 'text', 'sentAt']) && $messageId.length === 20",
                        "from": {".validate": "newData.val() === auth.uid"},
                        "text": {".validate": "newData.isString() && newData.val().length > 0"},
                        "sentAt": {".validate": "newData.val() === now"},
                    },
                },
            }
        },
    }
}

drift_data = {
    "users": {"alice": {"displayName": "Alice", "createdAt": 1600000000000}},
    "bottles": {
        "b1": {"owner": "alice", "expiresAt": NOW + 3600_000, "content": {"text": "hello sea"}},
        "old": {"owner": "alice", "expiresAt": NOW - 1, "content": {"text": "gone"}},
    },
    "chats": {"c1": {"members": {"alice": True, "bob": True}, "messages": {PUSH: {"from": "alice", "text": "hi", "sentAt": NOW - 5}}}},
}

g = group("drift", drift_rules, drift_data)
alice_email = {"uid": "alice", "provider": "password", "token": {"email": "alice@example.com", "email_verified": True}}
case(g, "a signed-in user reads a profile", "read", "/users/alice", "allow", "bob")
case(g, "anonymous clients cannot read profiles", "read", "/users/alice", "deny", None, reason="no .read rule granted it")
case(g, "nobody reads the whole users list", "read", "/users", "deny", "alice", reason="no .read rule applies at or above")
case(g, "a user creates their profile", "write", "/users/bob", "allow", "bob",
     value={"displayName": "Bob", "createdAt": NOW - 10})
case(g, "createdAt may use the server timestamp", "write", "/users/bob", "allow", "bob",
     value={"displayName": "Bob", "createdAt": {".sv": "timestamp"}})
case(g, "a user cannot write someone else's profile", "write", "/users/alice", "deny", "bob",
     value={"displayName": "Mallory", "createdAt": 1})
case(g, "a profile needs its required children", "write", "/users/bob", "validate-fail", "bob",
     value={"displayName": "Bob"}, reason="/users/$uid/.validate")
case(g, "unknown profile fields are rejected by $other", "write", "/users/bob", "validate-fail", "bob",
     value={"displayName": "Bob", "createdAt": 1, "isAdmin": True}, reason="/users/$uid/$other/.validate")
case(g, "displayName over 40 characters fails", "write", "/users/bob/displayName", "validate-fail", "bob",
     data={"users": {"bob": {"displayName": "Bob", "createdAt": 1}}}, value="B" * 41)
case(g, "displayName must be a string", "write", "/users/alice/displayName", "validate-fail", "alice", value=42)
case(g, "email must match the token's email claim", "write", "/users/alice/email", "allow", alice_email,
     value="alice@example.com")
case(g, "a forged email is rejected", "write", "/users/alice/email", "validate-fail", alice_email, value="ceo@example.com")
case(g, "createdAt in the future fails", "write", "/users/alice/createdAt", "validate-fail", "alice", value=NOW + 1)
case(g, "deleting a child still validates the parent (ancestor .validate)", "write", "/users/alice/createdAt",
     "validate-fail", "alice", value=None, reason="/users/$uid/.validate")
case(g, "deleting a whole profile skips validation", "write", "/users/alice", "allow", "alice", value=None)
case(g, "a multi-path update of the own profile is allowed", "update", "/users/alice", "allow", "alice",
     update={"displayName": "Alicia", "createdAt": 5})
case(g, "an update touching another user's profile is denied as a whole", "update", "/users", "deny", "alice",
     update={"alice/displayName": "A", "bob/displayName": "B"})
case(g, "an update that leaves the profile incomplete fails validation", "update", "/", "validate-fail", "carol",
     update={"users/carol/displayName": "Carol"})

case(g, "a bottle with an image path is created", "write", "/bottles/b2", "allow", "alice",
     value={"owner": "alice", "expiresAt": NOW + 1000, "content": {"image_path": "bottles/b2/image.jpg"}})
case(g, "a bottle with an audio path in its own folder is created", "write", "/bottles/b2", "allow", "alice",
     value={"owner": "alice", "expiresAt": NOW + 1000, "content": {"audio_path": "bottles/b2/voice.m4a"}})
case(g, "an audio path in another bottle's folder is rejected", "write", "/bottles/b2", "validate-fail", "alice",
     value={"owner": "alice", "expiresAt": NOW + 1000, "content": {"audio_path": "bottles/b1/voice.m4a"}},
     reason="/bottles/$bottleId/content/audio_path/.validate")
case(g, "an image path outside the bottles folder is rejected", "write", "/bottles/b2", "validate-fail", "alice",
     value={"owner": "alice", "expiresAt": NOW + 1000, "content": {"image_path": "../etc/passwd"}})
case(g, "an image path with a wrong extension is rejected", "write", "/bottles/b2", "validate-fail", "alice",
     value={"owner": "alice", "expiresAt": NOW + 1000, "content": {"image_path": "bottles/b2/image.gif"}})
case(g, "a bottle without content fails", "write", "/bottles/b2", "validate-fail", "alice",
     value={"owner": "alice", "expiresAt": NOW + 1000, "content": {"mood": "blue"}})
case(g, "a bottle created in someone else's name is denied", "write", "/bottles/b2", "deny", "bob",
     value={"owner": "alice", "expiresAt": NOW + 1000, "content": {"text": "x"}})
case(g, "the owner updates their bottle's text", "write", "/bottles/b1/content/text", "allow", "alice", value="edited")
case(g, "others cannot edit a bottle", "write", "/bottles/b1/content/text", "deny", "bob", value="vandal")
case(g, "a bottle that expired in the past cannot be created", "write", "/bottles/b3", "validate-fail", "alice",
     value={"owner": "alice", "expiresAt": NOW - 1, "content": {"text": "late"}})
case(g, "a live bottle is readable", "read", "/bottles/b1", "allow", "bob")
case(g, "an expired bottle is not readable", "read", "/bottles/old", "deny", "bob", reason="was false")
case(g, "a child of a live bottle is readable through the cascade", "read", "/bottles/b1/content/text", "allow", "bob")
case(g, "listing one's own bottles with the right query is allowed", "read", "/bottles", "allow", "alice",
     query={"orderByChild": "owner", "equalTo": "alice"})
case(g, "listing someone else's bottles is denied", "read", "/bottles", "deny", "alice",
     query={"orderByChild": "owner", "equalTo": "bob"})
case(g, "listing bottles without a query is denied", "read", "/bottles", "deny", "alice")
case(g, "the owner deletes a bottle (no validation on delete)", "write", "/bottles/b1", "allow", "alice", value=None)

case(g, "a member posts a message under a push key", "write", "/chats/c1/messages/-NjA1b2c3d4e5f6g7h8j", "allow", "bob",
     value={"from": "bob", "text": "hey", "sentAt": {".sv": "timestamp"}})
case(g, "a message with a client clock is rejected", "write", "/chats/c1/messages/-NjA1b2c3d4e5f6g7h8j", "validate-fail",
     "bob", value={"from": "bob", "text": "hey", "sentAt": NOW - 1})
case(g, "a message key that is not a push id is rejected", "write", "/chats/c1/messages/short", "validate-fail", "bob",
     value={"from": "bob", "text": "hey", "sentAt": {".sv": "timestamp"}})
case(g, "a non-member cannot post", "write", "/chats/c1/messages/-NjA1b2c3d4e5f6g7h8j", "deny", "carol",
     value={"from": "carol", "text": "hey", "sentAt": {".sv": "timestamp"}})
case(g, "messages cannot be spoofed as another sender", "write", "/chats/c1/messages/-NjA1b2c3d4e5f6g7h8j", "validate-fail",
     "bob", value={"from": "alice", "text": "hey", "sentAt": {".sv": "timestamp"}})
case(g, "existing messages cannot be edited", "write", f"/chats/c1/messages/{PUSH}/text", "deny", "alice", value="edited")
case(g, "members read the chat (root.child lookup)", "read", "/chats/c1", "allow", "bob")
case(g, "non-members cannot read the chat", "read", "/chats/c1/messages", "deny", "carol")
case(g, "a user adds themselves as a member", "write", "/chats/c2/members/carol", "allow", "carol", value=True)
case(g, "membership must be a boolean", "write", "/chats/c2/members/carol", "validate-fail", "carol", value="yes")

# --- Cascading -----------------------------------------------------------------------------

g = group("cascade", {"rules": {
    "foo": {
        ".read": True,
        ".write": "auth != null",
        "bar": {".read": False, ".write": False, "baz": {".read": True}},
    },
    "open": {".read": "true", "sub": {".read": "false"}},
    "closed": {".read": "false", "sub": {".read": "true"}},
}}, {"foo": {"bar": {"baz": 1}}})
case(g, "a grant at the parent covers the child", "read", "/foo/bar", "allow", None)
case(g, "a child's false cannot revoke a parent's grant", "read", "/foo/bar/baz", "allow", None)
case(g, "a write granted above cannot be revoked below", "write", "/foo/bar", "allow", "alice", value={"x": 1})
case(g, "string rules \"true\" grant", "read", "/open/sub", "allow", None)
case(g, "a child grant works under a parent denial", "read", "/closed/sub", "allow", None)
case(g, "the parent itself stays denied", "read", "/closed", "deny", None)
case(g, "default deny with no rules", "read", "/nowhere", "deny", "alice", reason="no .read rule applies")
case(g, "the root is denied without a root rule", "read", "/", "deny", "alice")
case(g, "an unauthenticated write is denied", "write", "/foo/x", "deny", None, value=1)

# --- Validate ------------------------------------------------------------------------------

g = group("validate", {"rules": {
    ".write": True,
    "item": {
        ".validate": "newData.hasChildren(['name'])",
        "name": {".validate": "newData.isString()"},
        "count": {".validate": "newData.isNumber() && newData.val() >= 0"},
        "$other": {".validate": False},
    },
    "flag": {".validate": "newData.isBoolean()"},
    "deep": {"$a": {"$b": {".validate": "$a + '/' + $b === newData.val()"}}},
    "broken": {".validate": "newData.val().contains('x')"},
}}, {"item": {"name": "n", "count": 1}})
case(g, ".validate passes for good data", "write", "/item", "allow", "a", value={"name": "x", "count": 2})
case(g, ".validate is not cascading: a grant does not skip child validation", "write", "/item/count", "validate-fail", "a",
     value=-1)
case(g, "writing at the root validates every node below", "write", "/", "validate-fail", None,
     value={"item": {"name": 5}})
case(g, "setting a node to null skips its own validation", "write", "/flag", "allow", None, value=None)
case(g, "deleting an unknown child is allowed despite $other false", "write", "/item/extra", "allow", None, value=None)
case(g, "creating an unknown child is rejected by $other", "write", "/item/extra", "validate-fail", None, value=1)
case(g, "the ancestor's .validate sees the merged data", "write", "/item/name", "validate-fail", None, value=None,
     reason="/item/.validate")
case(g, "booleans validate with isBoolean", "write", "/flag", "allow", None, value=False)
case(g, "a string is not a boolean", "write", "/flag", "validate-fail", None, value="false")
case(g, "nested captures bind per level", "write", "/deep/x/y", "allow", None, value="x/y")
case(g, "nested captures mismatch", "write", "/deep/x/y", "validate-fail", None, value="y/x")
case(g, "a runtime error in .validate fails validation (number has no contains)", "write", "/broken", "validate-fail", None,
     value=5, reason="number has no method contains()")
case(g, "validation passes when the error path is not taken", "write", "/broken", "allow", None, value="xyz")

# --- Wildcards -----------------------------------------------------------------------------

g = group("wildcards", {"rules": {
    "rooms": {
        "$room": {
            ".read": "$room.beginsWith('public-')",
            "special": {".read": "false"},
        },
        "lobby": {".read": "auth != null"},
    },
    "ids": {"$id": {".write": "$id === newData.val() + ''", ".read": "$id == 5"}},
}}, {})
case(g, "a $wildcard captures the key as a string", "read", "/rooms/public-1", "allow", None)
case(g, "the capture is tested per request", "read", "/rooms/private-1", "deny", None)
case(g, "a named sibling wins over the wildcard", "read", "/rooms/lobby", "deny", None)
case(g, "the named sibling's own rule grants", "read", "/rooms/lobby", "allow", "a")
case(g, "rules nested under the wildcard still cascade from it", "read", "/rooms/public-1/special", "allow", None)
case(g, "keys are strings: number concatenation makes them comparable", "write", "/ids/5", "allow", None, value=5)
case(g, "keys are strings: $id == 5 is false", "read", "/ids/5", "deny", None)

# --- auth ----------------------------------------------------------------------------------

g = group("auth", {"rules": {
    "admin": {".read": "auth.token.admin === true"},
    "verified": {".read": "auth.token.email_verified == true && auth.token.email.endsWith('@drift.app')"},
    "provider": {".read": "auth.provider === 'anonymous'"},
    "signin": {".read": "auth.token.firebase.sign_in_provider === 'google.com'"},
    "uid": {".read": "auth.uid !== 'banned'"},
    "method": {".read": "auth.uid.contains('a')"},
    "service": {".read": "auth.uid === 'my-service-worker'"},
    "bracket": {".read": "auth.token['role'] === 'editor'"},
}}, {})
case(g, "a custom claim grants", "read", "/admin", "allow", {"uid": "u", "token": {"admin": True}})
case(g, "a missing claim is null, not an error", "read", "/admin", "deny", {"uid": "u", "token": {}})
case(g, "auth.token on an anonymous request is null", "read", "/admin", "deny", None)
case(g, "email claims with string methods", "read", "/verified", "allow",
     {"uid": "u", "token": {"email": "me@drift.app", "email_verified": True}})
case(g, "an unverified email is denied", "read", "/verified", "deny",
     {"uid": "u", "token": {"email": "me@drift.app", "email_verified": False}})
case(g, "auth.provider", "read", "/provider", "allow", {"uid": "u", "provider": "anonymous"})
case(g, "auth.token.firebase.sign_in_provider", "read", "/signin", "allow",
     {"uid": "u", "provider": "google", "token": {"firebase": {"sign_in_provider": "google.com"}}})
case(g, "property access on null auth gives null: !== is true", "read", "/uid", "allow", None)
case(g, "a method call on null is an error that denies", "read", "/method", "deny", None, reason="called on null")
case(g, "auth_variable_override becomes auth", "read", "/service", "allow", {"override": {"uid": "my-service-worker"}})
case(g, "bracket access on objects", "read", "/bracket", "allow", {"uid": "u", "token": {"role": "editor"}})

# --- Snapshots -----------------------------------------------------------------------------

g = group("snapshots", {"rules": {
    "p": {
        "$k": {
            ".read": "data.child('ok').val() === true",
            ".write": "root.child('p/' + $k + '/owner').val() === auth.uid",
            "child": {".read": "data.parent().child('ok').val() === true"},
        }
    },
    "prio": {".read": "data.getPriority() === 5"},
    "noprio": {".read": "data.getPriority() === null"},
    "kids": {".read": "data.hasChildren()"},
    "leaf": {".read": "data.hasChildren() === false && data.exists() && data.isString()"},
    "num": {".read": "data.isNumber() && data.val() > 3.5"},
    "obj": {".read": "data.val() !== null && data.val() !== 'x'"},
    "deepchild": {".read": "data.child('a/b/c').val() === 1 && data.hasChild('a/b')"},
    "rootparent": {".read": "root.parent().exists()"},
    "haskids": {".read": "data.hasChildren([auth.uid])"},
}}, {
    "p": {"x": {"ok": True, "owner": "alice"}, "y": {"ok": False}},
    "prio": {".value": "v", ".priority": 5},
    "noprio": "v",
    "kids": {"a": 1},
    "leaf": "text",
    "num": 4,
    "obj": {"a": 1},
    "deepchild": {"a": {"b": {"c": 1}}},
    "haskids": {"a": 1},
})
case(g, "data.child().val()", "read", "/p/x", "allow", None)
case(g, "data.child().val() false", "read", "/p/y", "deny", None)
case(g, "data.parent()", "read", "/p/x/child", "allow", None)
case(g, "root.child() with a built path", "write", "/p/x/z", "allow", "alice", value=1)
case(g, "root.child() for someone else", "write", "/p/x/z", "deny", "bob", value=1)
case(g, "getPriority() reads .priority", "read", "/prio", "allow", None)
case(g, "getPriority() is null without a priority", "read", "/noprio", "allow", None)
case(g, "hasChildren() without arguments", "read", "/kids", "allow", None)
case(g, "a leaf has no children; isString()", "read", "/leaf", "allow", None)
case(g, "isNumber() and a comparison", "read", "/num", "allow", None)
case(g, "val() of a node with children is an opaque non-null value", "read", "/obj", "allow", None)
case(g, "child() accepts a/b/c paths, hasChild too", "read", "/deepchild", "allow", None)
case(g, "parent() of the root is an error", "read", "/rootparent", "deny", None, reason="parent() of the root")
case(g, "hasChildren() with a null name is an error", "read", "/haskids", "deny", None, reason="list of strings")

g = group("newData", {"rules": {
    "counter": {
        ".write": "newData.isNumber() && (!data.exists() ? newData.val() === 0 : newData.val() === data.val() + 1)",
    },
    "doc": {
        ".write": "newData.child('owner').val() === auth.uid",
        "title": {".validate": "newData.val().length <= 10"},
    },
    "anc": {".write": "newData.child('sub/x').val() === 1"},
    "prio": {".write": True, ".validate": "newData.getPriority() === null || newData.getPriority() > 0"},
}}, {"counter": 4})
case(g, "newData compared with data", "write", "/counter", "allow", None, value=5)
case(g, "newData skipping a step is denied", "write", "/counter", "deny", None, value=7)
case(g, "newData at an ancestor is the merged subtree", "write", "/doc/title", "allow", "alice",
     data={"doc": {"owner": "alice", "title": "a"}}, value="b")
case(g, "newData at the write location sees merged siblings", "write", "/anc/sub/x", "allow", None, value=1)
case(g, "priorities are visible in newData", "write", "/prio", "validate-fail", None, value={".value": 1, ".priority": -3})
case(g, "a positive priority passes", "write", "/prio", "allow", None, value={".value": 1, ".priority": 3})

# --- now and query -------------------------------------------------------------------------

g = group("query", {"rules": {
    "msgs": {
        ".read": "query.orderByKey && query.limitToFirst <= 50",
        "$m": {".read": "now > 1000"},
    },
    "scores": {".read": "query.orderByValue === true && query.startAt >= 100 && query.endAt === null"},
    "prio": {".read": "query.orderByPriority && query.limitToLast === 10"},
    "nolimit": {".read": "query.limitToFirst === null && query.orderByChild === null && !query.orderByKey"},
}}, {})
case(g, "orderByKey with a small limit", "read", "/msgs", "allow", None, query={"orderByKey": True, "limitToFirst": 20})
case(g, "a limit over 50 is denied", "read", "/msgs", "deny", None, query={"orderByKey": True, "limitToFirst": 51})
case(g, "no limit: null <= 50 is an error, denied", "read", "/msgs", "deny", None, query={"orderByKey": True})
case(g, "now is in milliseconds", "read", "/msgs/a", "allow", None)
case(g, "orderByValue with startAt", "read", "/scores", "allow", None, query={"orderByValue": True, "startAt": 150})
case(g, "startAt too low", "read", "/scores", "deny", None, query={"orderByValue": True, "startAt": 50})
case(g, "orderByPriority with limitToLast", "read", "/prio", "allow", None, query={"orderByPriority": True, "limitToLast": 10})
case(g, "a plain read has null limits and no order", "read", "/nolimit", "allow", None)

# --- operators and strings -----------------------------------------------------------------


def expr_group(name, expressions):
    rules = {"rules": {f"e{i}": {".read": e} for i, (e, _) in enumerate(expressions)}}
    g = group(name, rules, {"s": "Hello"})
    for i, (e, expected) in enumerate(expressions):
        case(g, e, "read", f"/e{i}", expected, None)


expr_group("operators", [
    ("1 + 2 === 3", "allow"),
    ("'one' + 1 === 'one1'", "allow"),
    ("'n' + 1.5 === 'n1.5' && 'n' + 2 === 'n2'", "allow"),
    ("'users/' + auth.uid === 'users/null'", "deny"),
    ("(1/0) > 2 || (1/0) < 2", "deny"),
    ("2.5 * 2 == 5", "allow"),
    ("(1/0 + '') == 'NaN'", "allow"),
    ("7 % 3 === 1", "allow"),
    ("-(3) === 0 - 3", "allow"),
    ("'5' == 5", "deny"),
    ("'5' != 5", "allow"),
    ("null == null", "allow"),
    ("'abc' < 'abd' && 2 <= 2 && 3 > 2.5 && 'b' >= 'a'", "allow"),
    ("1 < 'a'", "deny"),
    ("true ? false : true", "deny"),
    ("false ? false : 1 === 1", "allow"),
    ("!false && !(1 === 2)", "allow"),
    ("false || true", "allow"),
    ("true || (1 < 'x')", "allow"),
    ("false && (1 < 'x')", "deny"),
    ("!auth.token.flag", "deny"),
    ("auth.token.n - 1 === 0", "deny"),
    ("1 + 2 * 3 === 7 && (1 + 2) * 3 === 9", "allow"),
    ("1 === 1 ? 2 === 2 ? true : false : false", "allow"),
])
expr_group("strings", [
    ("'hello'.length === 5", "allow"),
    ("'hello'.contains('ell')", "allow"),
    ("'hello'.beginsWith('he') && 'hello'.endsWith('lo')", "allow"),
    ("'a-b-c'.replace('-', '+') === 'a+b+c'", "allow"),
    ("'a.b'.replace('.', '') === 'ab'", "allow"),
    ("'MiXeD'.toLowerCase() === 'mixed' && 'MiXeD'.toUpperCase() === 'MIXED'", "allow"),
    ("'abc123'.matches(/^[a-z]+[0-9]+$/)", "allow"),
    ("'ABC'.matches(/^abc$/i)", "allow"),
    ("'ABC'.matches(/^abc$/)", "deny"),
    ("'xxabcxx'.matches(/abc/)", "allow"),
    ("'ba'.matches(/a/) && !'ba'.matches(/^a/) && !'ab'.matches(/a$/)", "allow"),
    ("'2024-01-31'.matches(/^(19|20)[0-9][0-9][-\\/. ](0[1-9]|1[012])[-\\/. ](0[1-9]|[12][0-9]|3[01])$/)", "allow"),
    ("'Me@Example.COM'.matches(/^[A-Z0-9._%+-]+@[A-Z0-9.-]+\\.[A-Z]{2,4}$/i)", "allow"),
    ("'[^x]'.matches(/^[^a-z]/)", "allow"),
    ("'hello'.contains(auth.uid)", "deny"),
    ("'hello'['contains']('ell') && root['exists']()", "allow"),
    ("\"double\" === 'double'", "allow"),
    ("'it\\'s' === \"it's\"", "allow"),
    ("'\u00e9t\u00e9'.length === 3", "allow"),
])

# --- budget --------------------------------------------------------------------------------

many = " && ".join(["data.child('a').val() === null"] * 60)
g = group("budget", {"rules": {"x": {"$k": {"$l": {".validate": many}}}, ".write": True}}, {})
g["maxSteps"] = 10_000
case(g, "a large write hits the step budget and is denied", "write", "/x", "deny", None,
     value={f"k{i}": {f"l{j}": j for j in range(20)} for i in range(20)}, reason="evaluation steps")
case(g, "a small write under the same rules passes", "write", "/x", "allow", None, value={"k": {"l": 1}})

# --- verdicts recorded against production ------------------------------------------------
# Scenarios from davideast/pyric packages/conformance/rules-corpus/rtdb (r18, r19, r23, r25,
# r33), whose expectations were captured by deploying the rules to a real database. Rewritten
# here in this file's format.

g = group("production: loose equality does not convert (pyric r25)", {"rules": {
    "eqstring": {".write": "auth != null", ".validate": "newData.val() == '5'"},
    "eqtrue": {".write": "auth != null", ".validate": "newData.val() == true"},
    "eqzero": {".write": "auth != null", ".validate": "newData.val() == 0"},
    "eqfloat": {".write": "auth != null", ".validate": "newData.val() == 1.0"},
    "datanull": {".write": "auth != null && data.val() == null"},
}}, {})
case(g, "number 5 does not equal string 5", "write", "/eqstring", "validate-fail", "u", value=5)
case(g, "string 5 equals string 5", "write", "/eqstring", "allow", "u", value="5")
case(g, "number 1 does not equal true", "write", "/eqtrue", "validate-fail", "u", value=1)
case(g, "false does not equal 0", "write", "/eqzero", "validate-fail", "u", value=False)
case(g, "1 equals 1.0", "write", "/eqfloat", "allow", "u", value=1)
case(g, "missing data equals null", "write", "/datanull", "allow", "u", value="x")
case(g, "stored data does not equal null", "write", "/datanull", "deny", "u", value="x", data={"datanull": "stored"})

g = group("production: a null operand fails the rule even under || true (pyric r33)", {"rules": {
    "div": {".write": "auth != null", ".validate": "data.val() / 2 == 0 || true"},
    "gt": {".write": "auth != null", ".validate": "data.val() > 1 || true"},
    "gtright": {".write": "auth != null", ".validate": "1 > data.val() || true"},
}}, {})
case(g, "dividing nothing stored", "write", "/div", "validate-fail", "u", value=1)
case(g, "dividing a stored number", "write", "/div", "allow", "u", value=1, data={"div": 4})
case(g, "nothing stored greater than 1", "write", "/gt", "validate-fail", "u", value=1)
case(g, "a stored number greater than 1", "write", "/gt", "allow", "u", value=1, data={"gt": 4})
case(g, "1 greater than nothing stored", "write", "/gtright", "validate-fail", "u", value=1)

g = group("production: child() does not resolve dot segments (pyric r18)", {"rules": {
    ".read": "auth != null",
    "plain": {".write": "auth != null", ".validate": "newData.child('x').exists()"},
    "dot": {".write": "auth != null", ".validate": "newData.child('./x').exists()"},
    "dotdot": {".write": "auth != null", ".validate": "newData.child('a/../x').exists()"},
}}, {})
case(g, "a plain child path", "write", "/plain", "allow", "u", value={"x": 1})
case(g, "a leading dot segment", "write", "/dot", "validate-fail", "u", value={"x": 1})
case(g, "a dot-dot segment", "write", "/dotdot", "validate-fail", "u", value={"x": 1, "a": 1})

g = group("production: literal and wildcard siblings (pyric r19)", {"rules": {
    "wildcardfirst": {"$id": {".read": "true", ".write": "true"}, "special": {".read": "false", ".write": "false"}},
    "validate": {".write": "true", "title": {".validate": "true"}, "$other": {".validate": "false"}},
}}, {})
case(g, "the wildcard's grant does not apply to the literal key", "read", "/wildcardfirst/special", "deny", "u")
case(g, "the wildcard's grant does not apply to a write of the literal key", "write", "/wildcardfirst/special", "deny", "u",
     value="x")
case(g, "another key gets the wildcard's grant", "write", "/wildcardfirst/other", "allow", "u", value="x")
case(g, "the wildcard's .validate does not run for the literal key", "write", "/validate/title", "allow", "u", value="x")
case(g, "the wildcard's .validate runs for another key", "write", "/validate/other", "validate-fail", "u", value="x")

g = group("production: .validate runs only on carried nodes and ancestors (pyric r23)", {"rules": {
    "rooms": {"$room": {
        ".write": "auth != null",
        "title": {".validate": "newData.isString()"},
        "count": {".validate": "newData.val() == data.val() + 1"},
        "tag": {".validate": "newData.isNumber()"},
    }},
    "docs": {"$doc": {
        ".write": "auth != null",
        "meta": {".validate": "newData.parent().child('content').exists()"},
        "content": {".validate": "newData.isString()"},
    }},
}}, {"rooms": {"r1": {"count": 1, "tag": "bad"}, "r2": {"tag": "bad"}}, "docs": {"d1": {"meta": "info", "content": "hello"}}})
case(g, "a set of title next to an unchanged count and a failing tag", "write", "/rooms/r1/title", "allow", "u", value="lobby")
case(g, "a multi-path update of two titles", "update", "/rooms", "allow", "u", update={"r1/title": "a", "r2/title": "b"})
case(g, "a set of the room carrying count unchanged", "write", "/rooms/r1", "validate-fail", "u",
     value={"title": "lobby", "count": 1})
case(g, "an update of tag alone with its failing value", "update", "/rooms/r1", "validate-fail", "u", update={"tag": "bad"})
case(g, "count one higher", "write", "/rooms/r1/count", "allow", "u", value=2)
case(g, "count two higher", "write", "/rooms/r1/count", "validate-fail", "u", value=3)
case(g, "deleting content that an unwritten sibling requires", "write", "/docs/d1/content", "allow", "u", value=None)
case(g, "a multi-path update from the root deleting content", "update", "/", "allow", "u", update={"docs/d1/content": None})
case(g, "a set of the doc carrying meta without content", "write", "/docs/d1", "validate-fail", "u", value={"meta": "info"})

g = group("production: operator precedence (pyric r35)", {"rules": {
    "notorand": {".read": "!(true || false && false)"},
    "andor": {".read": "false && false || true"},
    "eqlt": {".read": "false == 1 < 2"},
    "ltchain": {".read": "1 < 2 == 2 < 3"},
    "ternaryor": {".read": "true || false ? false : true"},
    "ternaryright": {".read": "true ? false : true ? true : true"},
    "ternaryelse": {".read": "true ? false : true || true"},
    "notand": {".read": "!false && false"},
    "negadd": {".read": "-1 + 2 == 1"},
    "subleft": {".read": "10 - 4 - 3 == 3"},
    "divleft": {".read": "8 / 4 / 2 == 1"},
    "modmul": {".read": "7 % 4 * 2 == 6"},
}}, {})
for path, expect in [("notorand", "deny"), ("andor", "allow"), ("eqlt", "deny"), ("ltchain", "allow"), ("ternaryor", "deny"),
                     ("ternaryright", "deny"), ("ternaryelse", "deny"), ("notand", "deny"), ("negadd", "allow"),
                     ("subleft", "allow"), ("divleft", "allow"), ("modmul", "allow")]:
    case(g, path, "read", "/" + path, expect, None)

g = group("production: priorities (pyric r20)", {"rules": {
    "numberpriority": {".read": "data.getPriority() == 5"},
    "numbervalue": {".read": "data.val() == 'v'"},
    "stringpriority": {".read": "data.getPriority() == 'abc'"},
    "leafpriority": {".read": "data.child('leaf').getPriority() == 2 && data.child('leaf').val() == 'x'"},
    "written": {".write": "true", ".validate": "newData.getPriority() == 7 && newData.val() == 'w'"},
}}, {
    "numberpriority": {".value": "v", ".priority": 5},
    "numbervalue": {".value": "v", ".priority": 5},
    "stringpriority": {".value": 1, ".priority": "abc"},
    "leafpriority": {"leaf": {".value": "x", ".priority": 2}},
})
case(g, "a number priority", "read", "/numberpriority", "allow", "u")
case(g, "the value of a node with a priority", "read", "/numbervalue", "allow", "u")
case(g, "a string priority", "read", "/stringpriority", "allow", "u")
case(g, "a prioritized child", "read", "/leafpriority", "allow", "u")
case(g, "a write that carries a priority", "write", "/written", "allow", "u", value={".value": "w", ".priority": 7})

g = group("production: query rules (pyric r30)", {"rules": {
    "items": {".read": "query.orderByChild == 'owner' && query.equalTo == auth.uid", ".indexOn": ["owner"]},
    "firstpage": {".read": "query.limitToFirst <= 2"},
    "lastpage": {".read": "query.limitToLast <= 2"},
    "bykey": {".read": "query.orderByKey == true"},
    "range": {".read": "query.startAt == 'b' && query.endAt == 'm'"},
    "noorder": {".read": "query.orderByChild == null"},
    "keyfalse": {".read": "query.orderByKey == false"},
}}, {})
case(g, "orderByChild owner equalTo own uid", "read", "/items", "allow", "u", query={"orderByChild": "owner", "equalTo": "u"})
case(g, "orderByChild owner equalTo another uid", "read", "/items", "deny", "u",
     query={"orderByChild": "owner", "equalTo": "someone-else"})
case(g, "orderByChild on another child", "read", "/items", "deny", "u", query={"orderByChild": "name", "equalTo": "u"})
case(g, "a plain read of the owner-gated list", "read", "/items", "deny", "u")
case(g, "limitToFirst within the bound", "read", "/firstpage", "allow", "u", query={"limitToFirst": 2})
case(g, "limitToFirst over the bound", "read", "/firstpage", "deny", "u", query={"limitToFirst": 3})
case(g, "a plain read of the limit-gated node", "read", "/firstpage", "deny", "u")
case(g, "limitToFirst does not satisfy a limitToLast bound", "read", "/lastpage", "deny", "u", query={"limitToFirst": 1})
case(g, "orderByKey is false for a plain read", "read", "/bykey", "deny", "u")
case(g, "startAt and endAt", "read", "/range", "allow", "u", query={"orderByKey": True, "startAt": "b", "endAt": "m"})
case(g, "a different startAt", "read", "/range", "deny", "u", query={"orderByKey": True, "startAt": "a", "endAt": "m"})
case(g, "orderByChild is not null under orderByChild", "read", "/noorder", "deny", "u", query={"orderByChild": "owner"})
case(g, "orderByKey reads false for a plain read", "read", "/keyfalse", "allow", "u")

g = group("production: an ancestor's .validate governs a deeper write (pyric r14)", {"rules": {
    "docs": {"$docId": {
        ".read": "auth != null",
        ".write": "auth != null",
        ".validate": "newData.getPriority() === null && newData.hasChildren(['title', 'body'])",
        "meta": {"$key": {".write": "auth != null", ".validate": "newData.isString()"}},
    }},
    "ranked": {".read": "auth != null", ".write": "auth != null && newData.getPriority() !== null"},
}}, {})
case(g, "an unprioritized document", "write", "/docs/d1", "allow", "u", value={"title": "t", "body": "b"})
case(g, "a document missing body", "write", "/docs/d2", "validate-fail", "u", value={"title": "t"})
case(g, "a write beneath the validated node", "write", "/docs/d3/meta/tag", "validate-fail", "u", value="draft",
     reason="/docs/$docId/.validate")
case(g, "a priority-required node denies a plain write", "write", "/ranked", "deny", "u", value={"v": 1})

# --- comments in the rules file ------------------------------------------------------------

g = group("comments", [
    "// Drift's rules, with comments as Firebase allows",
    "{",
    "  /* block",
    "     comment */",
    "  \"rules\": {",
    "    \"a\": { \".read\": \"auth != null\" }, // trailing comment",
    "    \"b\": { \".read\": \"true\", \".indexOn\": \"x\" }",
    "  }",
    "}",
], {})
case(g, "rules with comments compile and apply", "read", "/a", "allow", "alice")
case(g, "rules with comments deny too", "read", "/a", "deny", None)
case(g, "a string rule \"true\"", "read", "/b/c", "allow", None)

out = {
    "comment": "Generated by sources/database_cases.py; edit that and rerun.",
    "groups": groups,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "database-cases.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
print(f"{sum(len(g['cases']) for g in groups)} cases in {len(groups)} groups -> {os.path.normpath(path)}")
