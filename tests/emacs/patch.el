;;; patch.el --- V4A patches through eglot: text across open and closed files; Add/Delete/Move  -*- lexical-binding: t; -*-

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defconst patch--text
  "*** Begin Patch
*** Update File: open.txt
@@
 one
-two
+TWO
*** Update File: closed.txt
@@
 uno
-dos
+DOS
*** End Patch
")

(defconst patch--resources
  "*** Begin Patch
*** Add File: added.txt
+fresh
*** Delete File: gone.txt
*** Update File: old.txt
*** Move to: moved.txt
@@
-old
+moved
*** End Patch
")

(defun patch--tree ()
  "The files of the workspace this scenario looks at, as on disk (null when absent)."
  (list :open (h-disk "open.txt") :closed (h-disk "closed.txt") :added (h-disk "added.txt")
        :gone (h-disk "gone.txt") :old (h-disk "old.txt") :moved (h-disk "moved.txt")))

(h-scenario
 (let ((open (h-open "open.txt")))
   ;; A two-file text patch: one file open in a buffer, one only on disk.
   (h-observe "text_result" (agent-edit-apply-patch (list :patch patch--text)))
   (h-observe "text_open_buffer" (h-text open))
   (h-observe "text_closed_buffer" (and (h-buffer-of "closed.txt") t))
   (h-observe "text_modified_buffers"
              (vconcat (cl-loop for b in (buffer-list)
                                when (and (buffer-file-name b) (buffer-modified-p b))
                                collect (buffer-name b))))
   (h-observe "tree_before" (patch--tree))
   ;; Add, Delete and Move, none of those files open.
   (h-observe "res_result" (agent-edit-apply-patch (list :patch patch--resources)))
   (h-observe "tree_after" (patch--tree))
   (h-observe "res_buffers"
              (vconcat (cl-loop for f in '("added.txt" "gone.txt" "old.txt" "moved.txt")
                                when (h-buffer-of f) collect f)))))
