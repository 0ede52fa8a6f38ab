"""lark's LALR tables for v4a.lark, as data (generated: `python -m lsp_server.engine.v4a`).

Do not edit: v4a.py parses with these without importing lark, and falls back to lark
when the grammar's hash differs.
"""

# fmt: off
TABLES = {'actions': {0: {'BEGIN': (0, 1), 'start': (0, 2)},
             1: {'ADD_FILE': (0, 3),
                 'DELETE_FILE': (0, 4),
                 'END': (0, 5),
                 'UPDATE_FILE': (0, 6),
                 '__start_star_0': (0, 7),
                 'add_file': (0, 8),
                 'delete_file': (0, 9),
                 'hunk': (0, 10),
                 'update_file': (0, 11)},
             2: {},
             3: {'ADD_BODY': (0, 12),
                 'ADD_FILE': (1, 4),
                 'DELETE_FILE': (1, 4),
                 'END': (1, 4),
                 'UPDATE_FILE': (1, 4)},
             4: {'ADD_FILE': (1, 6), 'DELETE_FILE': (1, 6), 'END': (1, 6), 'UPDATE_FILE': (1, 6)},
             5: {'$END': (1, 10)},
             6: {'BARE_CHUNK': (0, 13),
                 'CHUNK': (0, 14),
                 'MOVE_TO': (0, 15),
                 '__update_file_star_1': (0, 16)},
             7: {'ADD_FILE': (0, 3),
                 'DELETE_FILE': (0, 4),
                 'END': (0, 17),
                 'UPDATE_FILE': (0, 6),
                 'add_file': (0, 8),
                 'delete_file': (0, 9),
                 'hunk': (0, 18),
                 'update_file': (0, 11)},
             8: {'ADD_FILE': (1, 7), 'DELETE_FILE': (1, 7), 'END': (1, 7), 'UPDATE_FILE': (1, 7)},
             9: {'ADD_FILE': (1, 8), 'DELETE_FILE': (1, 8), 'END': (1, 8), 'UPDATE_FILE': (1, 8)},
             10: {'ADD_FILE': (1, 1), 'DELETE_FILE': (1, 1), 'END': (1, 1), 'UPDATE_FILE': (1, 1)},
             11: {'ADD_FILE': (1, 9), 'DELETE_FILE': (1, 9), 'END': (1, 9), 'UPDATE_FILE': (1, 9)},
             12: {'ADD_FILE': (1, 5), 'DELETE_FILE': (1, 5), 'END': (1, 5), 'UPDATE_FILE': (1, 5)},
             13: {'ADD_FILE': (1, 12),
                  'CHUNK': (0, 14),
                  'DELETE_FILE': (1, 12),
                  'END': (1, 12),
                  'UPDATE_FILE': (1, 12),
                  '__update_file_star_1': (0, 19)},
             14: {'ADD_FILE': (1, 2),
                  'CHUNK': (1, 2),
                  'DELETE_FILE': (1, 2),
                  'END': (1, 2),
                  'UPDATE_FILE': (1, 2)},
             15: {'BARE_CHUNK': (0, 20), 'CHUNK': (0, 14), '__update_file_star_1': (0, 21)},
             16: {'ADD_FILE': (1, 17),
                  'CHUNK': (0, 22),
                  'DELETE_FILE': (1, 17),
                  'END': (1, 17),
                  'UPDATE_FILE': (1, 17)},
             17: {'$END': (1, 11)},
             18: {'ADD_FILE': (1, 0), 'DELETE_FILE': (1, 0), 'END': (1, 0), 'UPDATE_FILE': (1, 0)},
             19: {'ADD_FILE': (1, 13),
                  'CHUNK': (0, 22),
                  'DELETE_FILE': (1, 13),
                  'END': (1, 13),
                  'UPDATE_FILE': (1, 13)},
             20: {'ADD_FILE': (1, 14),
                  'CHUNK': (0, 14),
                  'DELETE_FILE': (1, 14),
                  'END': (1, 14),
                  'UPDATE_FILE': (1, 14),
                  '__update_file_star_1': (0, 23)},
             21: {'ADD_FILE': (1, 16),
                  'CHUNK': (0, 22),
                  'DELETE_FILE': (1, 16),
                  'END': (1, 16),
                  'UPDATE_FILE': (1, 16)},
             22: {'ADD_FILE': (1, 3),
                  'CHUNK': (1, 3),
                  'DELETE_FILE': (1, 3),
                  'END': (1, 3),
                  'UPDATE_FILE': (1, 3)},
             23: {'ADD_FILE': (1, 15),
                  'CHUNK': (0, 22),
                  'DELETE_FILE': (1, 15),
                  'END': (1, 15),
                  'UPDATE_FILE': (1, 15)}},
 'end': 2,
 'grammar_sha256': '40cb0b077d7399544d84d9a38ecfc90794c23cce297c928f550547d4137cbb34',
 'lexer_of': {0: 0,
              1: 1,
              2: 2,
              3: 3,
              4: 1,
              5: 2,
              6: 4,
              7: 1,
              8: 1,
              9: 1,
              10: 1,
              11: 1,
              12: 1,
              13: 5,
              14: 5,
              15: 6,
              16: 5,
              17: 2,
              18: 1,
              19: 5,
              20: 5,
              21: 5,
              22: 5,
              23: 5},
 'lexers': [('(?P<BEGIN>\\*\\*\\*\\ Begin\\ Patch\\\n)',),
            ('(?P<DELETE_FILE>\\*\\*\\* Delete File: [^\n'
             ']*\n'
             ')|(?P<UPDATE_FILE>\\*\\*\\* Update File: [^\n'
             ']*\n'
             ')|(?P<ADD_FILE>\\*\\*\\* Add File: [^\n'
             ']*\n'
             ')|(?P<END>\\*\\*\\*\\ End\\ Patch\\\n'
             ')',),
            (),
            ('(?P<DELETE_FILE>\\*\\*\\* Delete File: [^\n'
             ']*\n'
             ')|(?P<UPDATE_FILE>\\*\\*\\* Update File: [^\n'
             ']*\n'
             ')|(?P<ADD_FILE>\\*\\*\\* Add File: [^\n'
             ']*\n'
             ')|(?P<ADD_BODY>(?:\\+[^\n'
             ']*\n'
             ')+)|(?P<END>\\*\\*\\*\\ End\\ Patch\\\n'
             ')',),
            ('(?P<CHUNK>(?:@@(?: [^\n'
             ']*)?\n'
             ')+(?:[ +\\-][^\n'
             ']*\n'
             '|\n'
             ')+(?:\\*\\*\\* End of File\n'
             ')?)|(?P<BARE_CHUNK>(?:[ +\\-][^\n'
             ']*\n'
             '|\n'
             ')+(?:\\*\\*\\* End of File\n'
             ')?)|(?P<MOVE_TO>\\*\\*\\* Move to: [^\n'
             ']*\n'
             ')',),
            ('(?P<CHUNK>(?:@@(?: [^\n'
             ']*)?\n'
             ')+(?:[ +\\-][^\n'
             ']*\n'
             '|\n'
             ')+(?:\\*\\*\\* End of File\n'
             ')?)|(?P<DELETE_FILE>\\*\\*\\* Delete File: [^\n'
             ']*\n'
             ')|(?P<UPDATE_FILE>\\*\\*\\* Update File: [^\n'
             ']*\n'
             ')|(?P<ADD_FILE>\\*\\*\\* Add File: [^\n'
             ']*\n'
             ')|(?P<END>\\*\\*\\*\\ End\\ Patch\\\n'
             ')',),
            ('(?P<CHUNK>(?:@@(?: [^\n'
             ']*)?\n'
             ')+(?:[ +\\-][^\n'
             ']*\n'
             '|\n'
             ')+(?:\\*\\*\\* End of File\n'
             ')?)|(?P<BARE_CHUNK>(?:[ +\\-][^\n'
             ']*\n'
             '|\n'
             ')+(?:\\*\\*\\* End of File\n'
             ')?)',)],
 'rules': [('__start_star_0', (1, 0), False),
           ('__start_star_0', (0,), False),
           ('__update_file_star_1', (0,), False),
           ('__update_file_star_1', (1, 0), False),
           ('add_file', (0,), False),
           ('add_file', (0, 0), False),
           ('delete_file', (0,), False),
           ('hunk', (0,), True),
           ('hunk', (0,), True),
           ('hunk', (0,), True),
           ('start', (0, 0), False),
           ('start', (0, 1, 0), False),
           ('update_file', (0, 0), False),
           ('update_file', (0, 0, 1), False),
           ('update_file', (0, 0, 0), False),
           ('update_file', (0, 0, 0, 1), False),
           ('update_file', (0, 0, 1), False),
           ('update_file', (0, 1), False)],
 'start': 0}
