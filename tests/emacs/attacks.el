;;; attacks.el --- What the package must refuse or keep, each made deterministic  -*- lexical-binding: t; -*-

;; 1. A file the server does not see as open (a buffer eglot does not manage) holds unsaved text:
;;    an edit the server planned from the disk must not land in that buffer at the disk's lines.
;; 2. The user declines eglot's confirmation: the server is told "not applied" (plain eglot
;;    answers applied: true whatever the answer).
;; 3. A two-file patch where the second file is typed into while the edit travels: refused as a
;;    whole, nothing applied (eglot applies file by file and stops at the stale one).
;; 4. The user's unsaved text is never saved behind their back when the server asks to save.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defconst attacks--patch
  "*** Begin Patch
*** Update File: one.txt
@@
-one
+ONE
*** Update File: two.txt
@@
-two
+TWO
*** End Patch
")

(defun attacks--type-into-two (&rest _)
  "The keystroke in two.txt that arrives while the patch is on its way."
  (h-type (h-buffer-of "two.txt") "typed\n"))

(h-scenario
 (let ((one (h-open "one.txt"))
       (two (h-open "two.txt"))
       (plain (find-file-noselect (expand-file-name "plain" h-root))))
   ;; 1. `plain' has no extension: fundamental-mode, which eglot never manages.
   (h-observe "plain_mode" (symbol-name (buffer-local-value 'major-mode plain)))
   (h-observe "plain_managed" (buffer-local-value 'eglot--managed-mode plain))
   (h-type plain "unsaved line\n")
   (h-observe "plain_result"
              (agent-edit-replace '(:path "plain" :oldText "second" :newText "SECOND")))
   (h-observe "plain_buffer" (h-text plain))
   (h-observe "plain_disk" (h-disk "plain"))
   ;; 2. Declined: `summary' asks before every agent-edit edit, of open files too (a server that
   ;; writes files not open itself never asks eglot for those); the user answers no.
   (let ((asked (h-open "asked.txt"))
         (eglot-confirm-server-edits '((agent-edit . summary))))
     (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) nil)))
       (h-observe "declined_result"
                  (agent-edit-replace '(:path "asked.txt" :oldText "x" :newText "y"))))
     (h-observe "declined_text" (h-text asked)))
   ;; 3. Stale second file.
   (advice-add 'agent-edit--apply-edit :before #'attacks--type-into-two)
   (h-observe "stale_result" (agent-edit-apply-patch (list :patch attacks--patch)))
   (advice-remove 'agent-edit--apply-edit #'attacks--type-into-two)
   (h-observe "stale_one" (h-text one))
   (h-observe "stale_two" (h-text two))
   ;; 4. one.txt holds the user's unsaved line, then the agent edits it.
   (h-type one "mine\n" (with-current-buffer one (point-max)))
   (h-observe "dirty_read" (agent-edit-read '(:path "one.txt")))
   (h-observe "dirty_result" (agent-edit-replace '(:path "one.txt" :oldText "one" :newText "ONE")))
   (h-observe "dirty_buffer" (h-text one))
   (h-observe "dirty_modified" (buffer-modified-p one))
   (h-observe "dirty_disk" (h-disk "one.txt"))))
