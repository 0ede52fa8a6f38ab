;;; gptel_tools.el --- The gptel tools, called the way gptel calls them  -*- lexical-binding: t; -*-

;; gptel is not installable here (no ELPA/MELPA), so `gptel-make-tool' is a stub that records its
;; arguments, and the tool's :function is called as gptel's `gptel--handle-tool-use' does: the
;; model's JSON arguments parsed, one value per declared argument in :args order (nil when the
;; model left an optional one out), and for an :async tool a callback first.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defvar gptel-stub--tools nil "The plists `gptel-make-tool' was called with.")

(defun gptel-make-tool (&rest slots)
  "Stub: record SLOTS."
  (push slots gptel-stub--tools)
  slots)

(defun gptel-stub--call (name json-args)
  "Call tool NAME with the model's JSON-ARGS as gptel does; return the result text."
  (let* ((tool (or (cl-find name gptel-stub--tools
                            :key (lambda (s) (plist-get s :name)) :test #'equal)
                   (error "no tool %s" name)))
         (args (json-parse-string json-args :object-type 'plist
                                  :null-object nil :false-object :json-false))
         (values (mapcar (lambda (arg)
                           (plist-get args (intern (concat ":" (plist-get arg :name)))))
                         (plist-get tool :args)))
         (result 'none))
    (if (plist-get tool :async)
        (apply (plist-get tool :function) (lambda (r) (setq result r)) values)
      (setq result (apply (plist-get tool :function) values)))
    (h-wait (lambda () (not (eq result 'none))) 30)
    result))

(h-scenario
 (let ((buf (h-open "notes.txt")))
   ;; gptel loading now runs the package's `with-eval-after-load'.  (Inside a file being loaded,
   ;; as this scenario is, Emacs would delay that until the file's end.)
   (let ((load-file-name nil)) (provide 'gptel))
   (h-observe "tools"
              (vconcat
               (mapcar (lambda (s)
                         (list :name (plist-get s :name)
                               :async (and (plist-get s :async) t)
                               :category (plist-get s :category)
                               :has_function (and (functionp (plist-get s :function)) t)
                               :description (plist-get s :description)
                               :args (vconcat (mapcar (lambda (a) (plist-get a :name))
                                                      (plist-get s :args)))))
                       (reverse gptel-stub--tools))))
   (h-observe "read" (gptel-stub--call "agent_edit_read" "{\"path\": \"notes.txt\"}"))
   (h-observe "replace"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"todo\", \"new_text\": \"done\"}"))
   (h-observe "text" (h-text buf))
   (h-observe "no_match"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"absent\", \"new_text\": \"x\", \"replace_all\": false}"))
   (h-observe "patch"
              (gptel-stub--call "agent_edit_apply_patch"
                                (json-serialize
                                 (list :patch "*** Begin Patch\n*** Update File: notes.txt\n@@\n-done: write tests\n+shipped: write tests\n*** End Patch\n"))))
   (h-observe "text_after_patch" (h-text buf))
   ;; replace_all as a string: "false" must not be taken as true (every "t" replaced).
   (h-observe "string_flag"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"t\", \"new_text\": \"T\", \"replace_all\": \"false\"}"))
   (h-observe "text_after_string_flag" (h-text buf))
   ;; A malformed call (the model sent a number for the path) still answers, never hangs gptel.
   (h-observe "bad_args" (gptel-stub--call "agent_edit_read" "{\"path\": 42}"))))
