"""The SDK server's answers to the MCP handshake (generated: do not edit).

Written by ``python -m precedents.mcp.handshake``; tests/test_mcp_front.py
captures them again from the SDK and compares."""

# ruff: noqa: E501

ANSWERS_JSON = r"""{
 "latest": "2025-11-25",
 "sdk": "2.3.0",
 "versions": {
  "2024-11-05": {
   "initialize": {
    "capabilities": {
     "prompts": {
      "listChanged": false
     },
     "resources": {
      "listChanged": false,
      "subscribe": false
     },
     "tools": {
      "listChanged": false
     }
    },
    "instructions": "Recall the user's stored judgment (memory notes, shared rules, ADRs) for a task; ADR marks say when a decision was replaced and by which one.",
    "protocolVersion": "2024-11-05",
    "serverInfo": {
     "name": "precedents",
     "version": ""
    }
   },
   "ping": {},
   "prompts/list": {
    "prompts": []
   },
   "resources/list": {
    "resources": []
   },
   "resources/templates/list": {
    "resourceTemplates": []
   },
   "tools/list": {
    "tools": [
     {
      "description": "Stored notes, rules and ADRs that may apply to `query` in `project` (a path;\n        default: the server's folder): the hook's injected lines and the top `k` records.",
      "inputSchema": {
       "properties": {
        "k": {
         "default": 5,
         "title": "K",
         "type": "integer"
        },
        "project": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Project"
        },
        "query": {
         "title": "Query",
         "type": "string"
        }
       },
       "required": [
        "query"
       ],
       "title": "recall_toolArguments",
       "type": "object"
      },
      "name": "recall",
      "outputSchema": {
       "additionalProperties": true,
       "title": "recall_toolDictOutput",
       "type": "object"
      }
     },
     {
      "description": "An ADR's effective status and mark, by id, number or path.",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "id": {
         "title": "Id",
         "type": "string"
        }
       },
       "required": [
        "id"
       ],
       "title": "adr_statusArguments",
       "type": "object"
      },
      "name": "adr_status",
      "outputSchema": {
       "additionalProperties": true,
       "title": "adr_statusDictOutput",
       "type": "object"
      }
     },
     {
      "description": "From an ADR, the replacements up to the decision in force: current, history;\n        each record's text as `lines` (none for a suspect record).",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "id": {
         "title": "Id",
         "type": "string"
        }
       },
       "required": [
        "id"
       ],
       "title": "adr_chainArguments",
       "type": "object"
      },
      "name": "adr_chain",
      "outputSchema": {
       "additionalProperties": true,
       "title": "adr_chainDictOutput",
       "type": "object"
      }
     },
     {
      "description": "ADRs whose title or text holds every word, with their statuses and marks.",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "words": {
         "title": "Words",
         "type": "string"
        }
       },
       "required": [
        "words"
       ],
       "title": "adr_findArguments",
       "type": "object"
      },
      "name": "adr_find",
      "outputSchema": {
       "properties": {
        "result": {
         "items": {
          "additionalProperties": true,
          "type": "object"
         },
         "title": "Result",
         "type": "array"
        }
       },
       "required": [
        "result"
       ],
       "title": "adr_findOutput",
       "type": "object"
      }
     },
     {
      "description": "Save a memory note (secrets masked): with `scope` personal (the default) in the\n        project's Claude Code memory folder; team: in its repository's team notes, to be\n        committed (`git_add` in the answer stages it; nothing is committed).",
      "inputSchema": {
       "properties": {
        "project": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Project"
        },
        "scope": {
         "default": "personal",
         "enum": [
          "personal",
          "team"
         ],
         "title": "Scope",
         "type": "string"
        },
        "text": {
         "title": "Text",
         "type": "string"
        },
        "title": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Title"
        }
       },
       "required": [
        "text"
       ],
       "title": "rememberArguments",
       "type": "object"
      },
      "name": "remember",
      "outputSchema": {
       "additionalProperties": true,
       "title": "rememberDictOutput",
       "type": "object"
      }
     }
    ]
   }
  },
  "2025-03-26": {
   "initialize": {
    "capabilities": {
     "prompts": {
      "listChanged": false
     },
     "resources": {
      "listChanged": false,
      "subscribe": false
     },
     "tools": {
      "listChanged": false
     }
    },
    "instructions": "Recall the user's stored judgment (memory notes, shared rules, ADRs) for a task; ADR marks say when a decision was replaced and by which one.",
    "protocolVersion": "2025-03-26",
    "serverInfo": {
     "name": "precedents",
     "version": ""
    }
   },
   "ping": {},
   "prompts/list": {
    "prompts": []
   },
   "resources/list": {
    "resources": []
   },
   "resources/templates/list": {
    "resourceTemplates": []
   },
   "tools/list": {
    "tools": [
     {
      "description": "Stored notes, rules and ADRs that may apply to `query` in `project` (a path;\n        default: the server's folder): the hook's injected lines and the top `k` records.",
      "inputSchema": {
       "properties": {
        "k": {
         "default": 5,
         "title": "K",
         "type": "integer"
        },
        "project": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Project"
        },
        "query": {
         "title": "Query",
         "type": "string"
        }
       },
       "required": [
        "query"
       ],
       "title": "recall_toolArguments",
       "type": "object"
      },
      "name": "recall",
      "outputSchema": {
       "additionalProperties": true,
       "title": "recall_toolDictOutput",
       "type": "object"
      }
     },
     {
      "description": "An ADR's effective status and mark, by id, number or path.",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "id": {
         "title": "Id",
         "type": "string"
        }
       },
       "required": [
        "id"
       ],
       "title": "adr_statusArguments",
       "type": "object"
      },
      "name": "adr_status",
      "outputSchema": {
       "additionalProperties": true,
       "title": "adr_statusDictOutput",
       "type": "object"
      }
     },
     {
      "description": "From an ADR, the replacements up to the decision in force: current, history;\n        each record's text as `lines` (none for a suspect record).",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "id": {
         "title": "Id",
         "type": "string"
        }
       },
       "required": [
        "id"
       ],
       "title": "adr_chainArguments",
       "type": "object"
      },
      "name": "adr_chain",
      "outputSchema": {
       "additionalProperties": true,
       "title": "adr_chainDictOutput",
       "type": "object"
      }
     },
     {
      "description": "ADRs whose title or text holds every word, with their statuses and marks.",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "words": {
         "title": "Words",
         "type": "string"
        }
       },
       "required": [
        "words"
       ],
       "title": "adr_findArguments",
       "type": "object"
      },
      "name": "adr_find",
      "outputSchema": {
       "properties": {
        "result": {
         "items": {
          "additionalProperties": true,
          "type": "object"
         },
         "title": "Result",
         "type": "array"
        }
       },
       "required": [
        "result"
       ],
       "title": "adr_findOutput",
       "type": "object"
      }
     },
     {
      "description": "Save a memory note (secrets masked): with `scope` personal (the default) in the\n        project's Claude Code memory folder; team: in its repository's team notes, to be\n        committed (`git_add` in the answer stages it; nothing is committed).",
      "inputSchema": {
       "properties": {
        "project": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Project"
        },
        "scope": {
         "default": "personal",
         "enum": [
          "personal",
          "team"
         ],
         "title": "Scope",
         "type": "string"
        },
        "text": {
         "title": "Text",
         "type": "string"
        },
        "title": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Title"
        }
       },
       "required": [
        "text"
       ],
       "title": "rememberArguments",
       "type": "object"
      },
      "name": "remember",
      "outputSchema": {
       "additionalProperties": true,
       "title": "rememberDictOutput",
       "type": "object"
      }
     }
    ]
   }
  },
  "2025-06-18": {
   "initialize": {
    "capabilities": {
     "prompts": {
      "listChanged": false
     },
     "resources": {
      "listChanged": false,
      "subscribe": false
     },
     "tools": {
      "listChanged": false
     }
    },
    "instructions": "Recall the user's stored judgment (memory notes, shared rules, ADRs) for a task; ADR marks say when a decision was replaced and by which one.",
    "protocolVersion": "2025-06-18",
    "serverInfo": {
     "name": "precedents",
     "version": ""
    }
   },
   "ping": {},
   "prompts/list": {
    "prompts": []
   },
   "resources/list": {
    "resources": []
   },
   "resources/templates/list": {
    "resourceTemplates": []
   },
   "tools/list": {
    "tools": [
     {
      "description": "Stored notes, rules and ADRs that may apply to `query` in `project` (a path;\n        default: the server's folder): the hook's injected lines and the top `k` records.",
      "inputSchema": {
       "properties": {
        "k": {
         "default": 5,
         "title": "K",
         "type": "integer"
        },
        "project": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Project"
        },
        "query": {
         "title": "Query",
         "type": "string"
        }
       },
       "required": [
        "query"
       ],
       "title": "recall_toolArguments",
       "type": "object"
      },
      "name": "recall",
      "outputSchema": {
       "additionalProperties": true,
       "title": "recall_toolDictOutput",
       "type": "object"
      }
     },
     {
      "description": "An ADR's effective status and mark, by id, number or path.",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "id": {
         "title": "Id",
         "type": "string"
        }
       },
       "required": [
        "id"
       ],
       "title": "adr_statusArguments",
       "type": "object"
      },
      "name": "adr_status",
      "outputSchema": {
       "additionalProperties": true,
       "title": "adr_statusDictOutput",
       "type": "object"
      }
     },
     {
      "description": "From an ADR, the replacements up to the decision in force: current, history;\n        each record's text as `lines` (none for a suspect record).",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "id": {
         "title": "Id",
         "type": "string"
        }
       },
       "required": [
        "id"
       ],
       "title": "adr_chainArguments",
       "type": "object"
      },
      "name": "adr_chain",
      "outputSchema": {
       "additionalProperties": true,
       "title": "adr_chainDictOutput",
       "type": "object"
      }
     },
     {
      "description": "ADRs whose title or text holds every word, with their statuses and marks.",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "words": {
         "title": "Words",
         "type": "string"
        }
       },
       "required": [
        "words"
       ],
       "title": "adr_findArguments",
       "type": "object"
      },
      "name": "adr_find",
      "outputSchema": {
       "properties": {
        "result": {
         "items": {
          "additionalProperties": true,
          "type": "object"
         },
         "title": "Result",
         "type": "array"
        }
       },
       "required": [
        "result"
       ],
       "title": "adr_findOutput",
       "type": "object"
      }
     },
     {
      "description": "Save a memory note (secrets masked): with `scope` personal (the default) in the\n        project's Claude Code memory folder; team: in its repository's team notes, to be\n        committed (`git_add` in the answer stages it; nothing is committed).",
      "inputSchema": {
       "properties": {
        "project": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Project"
        },
        "scope": {
         "default": "personal",
         "enum": [
          "personal",
          "team"
         ],
         "title": "Scope",
         "type": "string"
        },
        "text": {
         "title": "Text",
         "type": "string"
        },
        "title": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Title"
        }
       },
       "required": [
        "text"
       ],
       "title": "rememberArguments",
       "type": "object"
      },
      "name": "remember",
      "outputSchema": {
       "additionalProperties": true,
       "title": "rememberDictOutput",
       "type": "object"
      }
     }
    ]
   }
  },
  "2025-11-25": {
   "initialize": {
    "capabilities": {
     "prompts": {
      "listChanged": false
     },
     "resources": {
      "listChanged": false,
      "subscribe": false
     },
     "tools": {
      "listChanged": false
     }
    },
    "instructions": "Recall the user's stored judgment (memory notes, shared rules, ADRs) for a task; ADR marks say when a decision was replaced and by which one.",
    "protocolVersion": "2025-11-25",
    "serverInfo": {
     "name": "precedents",
     "version": ""
    }
   },
   "ping": {},
   "prompts/list": {
    "prompts": []
   },
   "resources/list": {
    "resources": []
   },
   "resources/templates/list": {
    "resourceTemplates": []
   },
   "tools/list": {
    "tools": [
     {
      "description": "Stored notes, rules and ADRs that may apply to `query` in `project` (a path;\n        default: the server's folder): the hook's injected lines and the top `k` records.",
      "inputSchema": {
       "properties": {
        "k": {
         "default": 5,
         "title": "K",
         "type": "integer"
        },
        "project": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Project"
        },
        "query": {
         "title": "Query",
         "type": "string"
        }
       },
       "required": [
        "query"
       ],
       "title": "recall_toolArguments",
       "type": "object"
      },
      "name": "recall",
      "outputSchema": {
       "additionalProperties": true,
       "title": "recall_toolDictOutput",
       "type": "object"
      }
     },
     {
      "description": "An ADR's effective status and mark, by id, number or path.",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "id": {
         "title": "Id",
         "type": "string"
        }
       },
       "required": [
        "id"
       ],
       "title": "adr_statusArguments",
       "type": "object"
      },
      "name": "adr_status",
      "outputSchema": {
       "additionalProperties": true,
       "title": "adr_statusDictOutput",
       "type": "object"
      }
     },
     {
      "description": "From an ADR, the replacements up to the decision in force: current, history;\n        each record's text as `lines` (none for a suspect record).",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "id": {
         "title": "Id",
         "type": "string"
        }
       },
       "required": [
        "id"
       ],
       "title": "adr_chainArguments",
       "type": "object"
      },
      "name": "adr_chain",
      "outputSchema": {
       "additionalProperties": true,
       "title": "adr_chainDictOutput",
       "type": "object"
      }
     },
     {
      "description": "ADRs whose title or text holds every word, with their statuses and marks.",
      "inputSchema": {
       "properties": {
        "dir": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Dir"
        },
        "words": {
         "title": "Words",
         "type": "string"
        }
       },
       "required": [
        "words"
       ],
       "title": "adr_findArguments",
       "type": "object"
      },
      "name": "adr_find",
      "outputSchema": {
       "properties": {
        "result": {
         "items": {
          "additionalProperties": true,
          "type": "object"
         },
         "title": "Result",
         "type": "array"
        }
       },
       "required": [
        "result"
       ],
       "title": "adr_findOutput",
       "type": "object"
      }
     },
     {
      "description": "Save a memory note (secrets masked): with `scope` personal (the default) in the\n        project's Claude Code memory folder; team: in its repository's team notes, to be\n        committed (`git_add` in the answer stages it; nothing is committed).",
      "inputSchema": {
       "properties": {
        "project": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Project"
        },
        "scope": {
         "default": "personal",
         "enum": [
          "personal",
          "team"
         ],
         "title": "Scope",
         "type": "string"
        },
        "text": {
         "title": "Text",
         "type": "string"
        },
        "title": {
         "anyOf": [
          {
           "type": "string"
          },
          {
           "type": "null"
          }
         ],
         "default": null,
         "title": "Title"
        }
       },
       "required": [
        "text"
       ],
       "title": "rememberArguments",
       "type": "object"
      },
      "name": "remember",
      "outputSchema": {
       "additionalProperties": true,
       "title": "rememberDictOutput",
       "type": "object"
      }
     }
    ]
   }
  }
 }
}"""
