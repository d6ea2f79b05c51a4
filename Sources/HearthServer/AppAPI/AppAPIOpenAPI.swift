import HearthCore

/// `/openapi.json`: the api port described in OpenAPI 3.1 (as FastAPI publishes its own).
enum AppAPIOpenAPI {
    static let document: JSON = {
        do {
            return try JSON.parse(text)
        } catch {
            preconditionFailure("AppAPIOpenAPI.text is not JSON: \(error)")  // a constant; the unit and conformance tests parse it
        }
    }()

    static let text = #"""
        {
          "openapi": "3.1.0",
          "info": {"title": "Hearth app API", "version": "1.0.0",
                   "description": "The file registry of Hearth's api port: presigned S3 uploads and downloads, with a files/{fileId} record per file in the document database."},
          "paths": {
            "/healthz": {"get": {"summary": "Liveness", "operationId": "healthz",
              "responses": {"200": {"description": "The process is up", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}}}}},
            "/readyz": {"get": {"summary": "Readiness", "operationId": "readyz",
              "responses": {"200": {"description": "The document database answers", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}}}}},
            "/v1/files/presign-upload": {"post": {
              "summary": "Request an upload URL", "operationId": "presignUpload", "tags": ["files"],
              "security": [{"HTTPBearer": [], "AppCheck": []}, {"HTTPBearer": []}],
              "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PresignUploadRequest"}}}},
              "responses": {
                "200": {"description": "The file is recorded as pending; upload it with the returned request",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PresignUploadResponse"}}}},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "422": {"$ref": "#/components/responses/Unprocessable"}}}},
            "/v1/files/{fileId}/complete": {"post": {
              "summary": "Mark an upload complete (the server checks the object)", "operationId": "completeUpload", "tags": ["files"],
              "security": [{"HTTPBearer": [], "AppCheck": []}, {"HTTPBearer": []}],
              "parameters": [{"$ref": "#/components/parameters/FileId"}],
              "responses": {
                "200": {"description": "The file is ready", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CompleteResponse"}}}},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "403": {"$ref": "#/components/responses/Forbidden"},
                "404": {"$ref": "#/components/responses/NotFound"},
                "409": {"$ref": "#/components/responses/Conflict"},
                "422": {"$ref": "#/components/responses/Unprocessable"}}}},
            "/v1/files/{fileId}/presign-download": {"post": {
              "summary": "Request a download URL for a ready file", "operationId": "presignDownload", "tags": ["files"],
              "security": [{"HTTPBearer": [], "AppCheck": []}, {"HTTPBearer": []}],
              "parameters": [{"$ref": "#/components/parameters/FileId"}],
              "responses": {
                "200": {"description": "A presigned GET", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PresignDownloadResponse"}}}},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "403": {"$ref": "#/components/responses/Forbidden"},
                "404": {"$ref": "#/components/responses/NotFound"},
                "409": {"$ref": "#/components/responses/Conflict"}}}},
            "/v1/files": {"get": {
              "summary": "The caller's files, newest first", "operationId": "listFiles", "tags": ["files"],
              "security": [{"HTTPBearer": [], "AppCheck": []}, {"HTTPBearer": []}],
              "parameters": [
                {"name": "pageSize", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}},
                {"name": "pageToken", "in": "query", "required": false, "schema": {"type": "string"}}],
              "responses": {
                "200": {"description": "One page", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FileList"}}}},
                "400": {"$ref": "#/components/responses/BadRequest"},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "422": {"$ref": "#/components/responses/Unprocessable"}}}},
            "/v1/files/{fileId}": {"delete": {
              "summary": "Delete a file (object and record)", "operationId": "deleteFile", "tags": ["files"],
              "security": [{"HTTPBearer": [], "AppCheck": []}, {"HTTPBearer": []}],
              "parameters": [{"$ref": "#/components/parameters/FileId"}],
              "responses": {
                "204": {"description": "Deleted"},
                "401": {"$ref": "#/components/responses/Unauthorized"},
                "403": {"$ref": "#/components/responses/Forbidden"},
                "404": {"$ref": "#/components/responses/NotFound"}}}}
          },
          "components": {
            "securitySchemes": {
              "HTTPBearer": {"type": "http", "scheme": "bearer", "bearerFormat": "Firebase ID token"},
              "AppCheck": {"type": "apiKey", "in": "header", "name": "X-Firebase-AppCheck"}
            },
            "parameters": {
              "FileId": {"name": "fileId", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[0-7][0-9A-HJKMNP-TV-Z]{25}$"}}
            },
            "responses": {
              "BadRequest": {"description": "Malformed request", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPError"}}}},
              "Unauthorized": {"description": "Missing or invalid ID token or App Check token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPError"}}}},
              "Forbidden": {"description": "Not the caller's file", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPError"}}}},
              "NotFound": {"description": "Unknown file", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPError"}}}},
              "Conflict": {"description": "The object is not uploaded yet, the file is not ready, or it failed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPError"}}}},
              "Unprocessable": {"description": "Invalid input, or an upload outside the limits", "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/HTTPError"}, {"$ref": "#/components/schemas/HTTPValidationError"}]}}}}
            },
            "schemas": {
              "Status": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}},
              "HTTPError": {"type": "object", "required": ["detail"], "properties": {"detail": {"type": "string"}}},
              "ValidationError": {"type": "object", "required": ["type", "loc", "msg"], "properties": {
                "type": {"type": "string"}, "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                "msg": {"type": "string"}, "input": {}, "ctx": {"type": "object"}}},
              "HTTPValidationError": {"type": "object", "required": ["detail"], "properties": {"detail": {"type": "array", "items": {"$ref": "#/components/schemas/ValidationError"}}}},
              "PresignUploadRequest": {"type": "object", "required": ["contentType", "fileExtension"], "properties": {
                "contentType": {"type": "string", "examples": ["image/jpeg"]},
                "fileExtension": {"type": "string", "pattern": "^[A-Za-z0-9]{1,16}$", "examples": ["jpg"]},
                "sizeBytes": {"type": "integer", "minimum": 0, "description": "Optional declared size, checked against the limit"}}},
              "PresignUploadResponse": {"type": "object", "required": ["fileId", "bucket", "key", "upload"], "properties": {
                "fileId": {"type": "string", "description": "A ULID"},
                "bucket": {"type": "string"},
                "key": {"type": "string", "examples": ["users/<uid>/uploads/<fileId>.jpg"]},
                "upload": {"type": "object", "required": ["method", "url", "expiresInSeconds"], "properties": {
                  "method": {"type": "string", "enum": ["PUT", "POST"]},
                  "url": {"type": "string", "format": "uri"},
                  "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "PUT: headers to send unchanged"},
                  "fields": {"type": "object", "additionalProperties": {"type": "string"}, "description": "POST: form fields to send before the file"},
                  "expiresInSeconds": {"type": "integer"}}}}},
              "CompleteResponse": {"type": "object", "required": ["fileId", "status", "sizeBytes"], "properties": {
                "fileId": {"type": "string"}, "status": {"type": "string", "enum": ["ready"]}, "sizeBytes": {"type": "integer"}}},
              "PresignDownloadResponse": {"type": "object", "required": ["download"], "properties": {
                "download": {"type": "object", "required": ["method", "url", "expiresInSeconds"], "properties": {
                  "method": {"type": "string", "enum": ["GET"]}, "url": {"type": "string", "format": "uri"}, "expiresInSeconds": {"type": "integer"}}}}},
              "File": {"type": "object", "required": ["fileId", "bucket", "key", "contentType", "status", "sizeBytes", "createdAt", "updatedAt"], "properties": {
                "fileId": {"type": "string"}, "bucket": {"type": "string"}, "key": {"type": "string"}, "contentType": {"type": "string"},
                "status": {"type": "string", "enum": ["pending", "ready", "failed"]},
                "sizeBytes": {"type": ["integer", "null"]},
                "createdAt": {"type": "string", "format": "date-time"}, "updatedAt": {"type": "string", "format": "date-time"},
                "failureReason": {"type": "string"}}},
              "FileList": {"type": "object", "required": ["files", "nextPageToken"], "properties": {
                "files": {"type": "array", "items": {"$ref": "#/components/schemas/File"}},
                "nextPageToken": {"type": ["string", "null"]}}}
            }
          }
        }
        """#
}
