;;; history_undo.el --- M-x agent-edit-history and M-x agent-edit-undo  -*- lexical-binding: t; -*-

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(h-scenario
 ;; python-mode has its own servers in `eglot-server-programs' (the agent-edit entry comes last):
 ;; start agent-edit for the project by name, as the README says.
 (with-current-buffer (find-file-noselect (expand-file-name "lib.py" h-root))
   (agent-edit-start))
 (let ((buf (h-open "lib.py")))
   (h-observe "replace" (agent-edit-replace '(:path "lib.py" :oldText "\"hi\"" :newText "\"hello\"")))
   (let ((view (agent-edit-history)))
     (with-current-buffer view
       (h-observe "view_mode" (symbol-name major-mode))
       (h-observe "view_read_only" buffer-read-only)
       (h-observe "view_dir" default-directory)
       (h-observe "view_text" (buffer-string))
       ;; diff-mode must understand it: the hunk's file is the workspace file.
       (goto-char (point-min))
       (diff-hunk-next)
       (h-observe "hunk_file" (expand-file-name (diff-find-file-name)))))
   (let ((id (plist-get (gethash "replace" h-observed) :editId)))
     (with-current-buffer (agent-edit-history id)
       (h-observe "entry_text" (buffer-string))))
   (h-observe "undo" (agent-edit-undo))
   (h-observe "after_undo" (h-text buf))
   ;; Nothing left to undo but the undo itself is not undoable by "undo the newest": the server
   ;; says which edits can be undone.
   (with-current-buffer (agent-edit-history)
     (revert-buffer t t)
     (h-observe "view_after_undo" (buffer-string)))
   (h-observe "history" (agent-edit-execute "history" '(:limit 10)))))
